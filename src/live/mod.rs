//! Live progress: events of followed things (tasks, orders, …) fanned out to WebSocket
//! and SSE subscribers. It knows no domain: each domain registers a [`Source`] per stream
//! kind, appends its events to its own store and publishes them ([`publish`]).
//!
//! Each API instance listens to the broker's events exchange with its own queue
//! ([`Hub`]) and hands events to the connections that may see them (the owner, and
//! admins). A subscriber first gets the snapshot (or, resuming, exactly the stored
//! events after its last sequence number), then live events, with no gap and no
//! duplicate ([`follow::Follow`], the one rule both transports keep).

pub mod control;
pub mod event;
pub mod follow;
pub mod hub;
pub mod source;
pub mod sse;
pub mod tickets;
pub mod ws;

use axum::Router;
use axum::extract::FromRef;
use axum::routing::{get, post};

use crate::api::Core;

pub use control::Control;
pub use event::{Event, Shared, publish};
pub use hub::Hub;
pub use source::{Snapshot, Source, Sources};

/// The stream kind that today's task-only forms name implicitly
/// (`{"op":"subscribe","task_id":…}`, `/v1/tasks/{id}/events`).
pub const TASK_STREAM: &str = "task";

/// The live routes' state.
#[derive(Clone, FromRef)]
pub struct Live {
    pub core: Core,
    pub hub: Hub,
    pub sources: Sources,
}

pub fn routes(state: Live) -> Router {
    Router::new()
        .route("/v1/ws-tickets", post(tickets::issue))
        .route("/v1/ws", get(ws::upgrade))
        .route("/v1/streams/{stream}/{id}/events", get(sse::stream))
        .route("/v1/tasks/{id}/events", get(sse::task_stream))
        .route("/demo", get(demo))
        .with_state(state)
}

/// The routes' OpenAPI entries.
#[derive(utoipa::OpenApi)]
#[openapi(paths(tickets::issue, ws::upgrade, sse::stream, sse::task_stream, demo))]
pub struct Doc;

/// `GET /demo`: a page that submits a task and draws its progress from the WebSocket.
#[utoipa::path(get, path = "/demo", tag = "live",
    responses((status = 200, description = "A page that submits a task and draws its progress from the WebSocket", content_type = "text/html", body = String)))]
pub(crate) async fn demo() -> axum::response::Html<&'static str> {
    axum::response::Html(include_str!("demo.html"))
}
