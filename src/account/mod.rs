//! Accounts over HTTP: the caller's own (`GET /v1/me`: balance, membership;
//! `GET /v1/me/ledger`: every movement of the balance), and a tenant's keys and limits
//! for admins (`/v1/admin/users/{id}/keys…`, `/v1/admin/users/{id}/limits`), with the
//! administration both the API and the CLI use ([`keys`]).

pub mod admin;
pub mod keys;
pub mod ledger;
pub mod me;

use axum::Router;
use axum::routing::{get, post};

use crate::api::Core;

pub fn routes(core: Core) -> Router {
    Router::new()
        .route("/v1/me", get(me::me))
        .route("/v1/me/ledger", get(ledger::ledger))
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
        .with_state(core)
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
    admin::set_limits
))]
pub struct Doc;
