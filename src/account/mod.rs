//! The caller's own account over HTTP: `GET /v1/me` (balance, membership) and
//! `GET /v1/me/ledger` (every movement of the balance).

pub mod ledger;
pub mod me;

use axum::Router;
use axum::routing::get;

use crate::api::Core;

pub fn routes(core: Core) -> Router {
    Router::new()
        .route("/v1/me", get(me::me))
        .route("/v1/me/ledger", get(ledger::ledger))
        .with_state(core)
}

/// The routes' OpenAPI entries.
#[derive(utoipa::OpenApi)]
#[openapi(paths(me::me, ledger::ledger))]
pub struct Doc;
