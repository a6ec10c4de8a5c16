//! `GET /assets/conveyor-client.js`: the TypeScript client (`clients/typescript`) bundled
//! for conveyor's own pages (`/demo`, `/ops`), which load it instead of carrying their own
//! WebSocket and SSE code. The bundle is checked in (`npm run bundle` rewrites it; CI
//! fails when it is stale), so building the server needs no Node.

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

/// The bundle: a script defining `window.Conveyor` (`createConveyor`, `ConveyorError`, …).
const CLIENT_JS: &str = include_str!("conveyor-client.js");

pub fn routes() -> Router {
    Router::new().route("/assets/conveyor-client.js", get(client_js))
}

/// The routes' OpenAPI entries.
#[derive(utoipa::OpenApi)]
#[openapi(paths(client_js))]
pub struct Doc;

/// The client bundle the pages load. Revalidated after five minutes: a new server version
/// brings a new bundle, and its pages must not run an old one for long.
#[utoipa::path(get, path = "/assets/conveyor-client.js", tag = "live",
    responses((status = 200, description = "`@conveyor/client` as one script (`window.Conveyor`), for the pages conveyor serves", content_type = "text/javascript", body = String)))]
pub(crate) async fn client_js() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        CLIENT_JS,
    )
}
