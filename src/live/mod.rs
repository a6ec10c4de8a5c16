//! Live progress: task events fanned out to WebSocket and SSE subscribers.
//!
//! Consumers append every status change and progress step to `task_events` (with a
//! per-task sequence number) and publish it to the events exchange; each API instance
//! listens with its own queue ([`hub::Hub`]) and hands events to the connections that
//! may see them. A subscriber first gets the task's snapshot (or, resuming, exactly the
//! stored events after its last sequence number), then live events, with no gap and no
//! duplicate: the listener is attached before the store is read, and events at or below
//! the last sequence sent are dropped.

pub mod hub;
pub mod sse;
pub mod tickets;
pub mod ws;

use axum::Router;
use axum::routing::{get, post};

use crate::app::AppState;

pub use hub::Hub;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/ws-tickets", post(tickets::issue))
        .route("/v1/ws", get(ws::upgrade))
        .route("/v1/tasks/{id}/events", get(sse::stream))
        .route("/demo", get(demo))
}

/// `GET /demo`: a page that submits a task and draws its progress from the WebSocket.
#[utoipa::path(get, path = "/demo", tag = "live",
    responses((status = 200, description = "A page that submits a task and draws its progress from the WebSocket", content_type = "text/html", body = String)))]
pub(crate) async fn demo() -> axum::response::Html<&'static str> {
    axum::response::Html(include_str!("demo.html"))
}
