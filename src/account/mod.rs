//! Accounts over HTTP: the caller's own (`GET /v1/me`: balance, membership, plan,
//! limits and usage; `GET /v1/me/ledger`: every movement of the balance), a tenant's
//! keys, limits and plan for admins (`/v1/admin/users/{id}/…`), organisations
//! ([`orgs`]: admins and owners) and the invitations to join one ([`invitations`]), with
//! the administration both the API and the CLI use ([`keys`]).

pub mod admin;
pub mod invitations;
pub mod keys;
pub mod ledger;
pub mod me;
pub mod orgs;

use std::sync::Arc;

use axum::Router;
use axum::extract::FromRef;
use axum::routing::{delete, get, post, put};

use crate::api::Core;
use crate::api::settings::AuthSettings;

/// What the configuration decides in these routes' document, so that a client generated
/// from it never sends a name the server refuses: the plans an admin may choose
/// (`PlanChoice.plan`, or `null`) and the limits an override may name (`Overrides`, each
/// a whole number up to [`crate::limits::declared::MAX_VALUE`]).
pub fn documented(
    plans: &crate::plans::Plans,
    declared: &[crate::limits::Limit],
    doc: &mut utoipa::openapi::OpenApi,
) {
    use serde_json::{Value, json};
    let choices: Vec<Value> = plans
        .names()
        .into_iter()
        .map(Value::from)
        .chain([Value::Null])
        .collect();
    let plan = json!({
        "type": "object",
        "properties": {"plan": {
            "type": ["string", "null"],
            "enum": choices,
            "description": "A configured plan; `null` clears the choice (the plan follows memberships again).",
        }},
        "additionalProperties": false,
    });
    let max = crate::limits::declared::MAX_VALUE;
    let named: serde_json::Map<String, Value> = declared
        .iter()
        .map(|l| {
            (
                l.key.to_owned(),
                json!({"type": "integer", "minimum": 0, "maximum": max}),
            )
        })
        .collect();
    let overrides = json!({
        "type": "object",
        "description": "The limits an admin set for one user, by key (0 turns one off); a limit not named follows the plan and `[limits]`.",
        "properties": named,
        "additionalProperties": false,
    });
    crate::api::openapi::set_schema(doc, "PlanChoice", plan);
    crate::api::openapi::set_schema(doc, "Overrides", overrides);
}

/// The routes' state: the core and `[auth]` (how long a rotated key keeps working).
#[derive(Clone, FromRef)]
pub struct Account {
    pub core: Core,
    pub auth: Arc<AuthSettings>,
}

pub fn routes(state: Account) -> Router {
    Router::new()
        .route("/v1/me", get(me::me))
        .route("/v1/me/ledger", get(ledger::ledger))
        .route("/v1/me/invitations", get(invitations::mine))
        .route("/v1/me/invitations/{id}/accept", post(invitations::accept))
        .route(
            "/v1/me/invitations/{id}/decline",
            post(invitations::decline),
        )
        .route(
            "/v1/admin/users/{id}/keys",
            get(admin::list_keys).post(admin::create_key),
        )
        .route(
            "/v1/admin/users/{id}/keys/{key_id}/revoke",
            post(admin::revoke_key),
        )
        .route(
            "/v1/admin/users/{id}/keys/{key_id}/rotate",
            post(admin::rotate_key),
        )
        .route(
            "/v1/admin/users/{id}/limits",
            get(admin::get_limits).put(admin::set_limits),
        )
        .route("/v1/admin/users/{id}/plan", put(orgs::set_user_plan))
        .route("/v1/admin/orgs", post(orgs::create))
        .route("/v1/admin/orgs/{id}", get(orgs::get))
        .route("/v1/admin/orgs/{id}/plan", put(orgs::set_plan))
        .route("/v1/admin/orgs/{id}/members", post(orgs::admin_add))
        .route(
            "/v1/admin/orgs/{id}/members/{user_id}",
            delete(orgs::admin_remove),
        )
        .route("/v1/org", get(orgs::mine))
        .route("/v1/org/members", post(invitations::invite))
        .route("/v1/org/invitations", get(invitations::of_org))
        .route("/v1/org/invitations/{id}/revoke", post(invitations::revoke))
        .route("/v1/org/members/{user_id}", delete(orgs::owner_remove))
        .with_state(state)
}

/// The routes' OpenAPI entries.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    me::me,
    ledger::ledger,
    admin::list_keys,
    admin::create_key,
    admin::revoke_key,
    admin::rotate_key,
    admin::get_limits,
    admin::set_limits,
    orgs::set_user_plan,
    orgs::create,
    orgs::get,
    orgs::set_plan,
    orgs::admin_add,
    orgs::admin_remove,
    orgs::mine,
    invitations::invite,
    invitations::of_org,
    invitations::revoke,
    invitations::mine,
    invitations::accept,
    invitations::decline,
    orgs::owner_remove
))]
pub struct Doc;
