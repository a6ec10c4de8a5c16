//! The caller's own account over HTTP: `GET /v1/me`.

pub mod me;

use axum::Router;
use axum::routing::get;

use crate::api::Core;

pub fn routes(core: Core) -> Router {
    Router::new().route("/v1/me", get(me::me)).with_state(core)
}

/// The routes' OpenAPI entries.
#[derive(utoipa::OpenApi)]
#[openapi(paths(me::me))]
pub struct Doc;
