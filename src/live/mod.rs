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
pub mod frames;
pub mod hub;
pub mod refresh;
pub mod settings;
pub mod source;
pub mod sse;
pub mod tickets;
pub mod ws;

use axum::Router;
use axum::extract::FromRef;
use axum::routing::{get, post};

use crate::api::Core;
use crate::limits::{Limit, RateLimit};

pub use event::{EVENTS, Event, Shared, publish};
pub use hub::Hub;
pub use source::{Snapshot, Source, Sources};

/// WebSocket tickets one user may take per minute (and at once).
pub const TICKETS: RateLimit = RateLimit::new(
    "ticket",
    Limit::new(
        "tickets_per_min",
        60,
        "WebSocket tickets per minute (POST /v1/ws-tickets)",
    ),
    std::time::Duration::from_secs(60),
);

/// WebSocket and SSE streams one user may hold open, per API instance.
pub const STREAMS: Limit = Limit::new(
    "streams_per_user",
    100,
    "open WebSocket and SSE streams per user, per API instance",
);

/// A permit for one more open stream of the user's (held while it is open), or 429
/// `too_many_streams`.
pub(crate) async fn open_stream(
    limits: &crate::limits::Limits,
    user_id: &str,
) -> Result<crate::limits::StreamPermit, crate::error::ApiError> {
    match limits.hold(&STREAMS, user_id).await {
        Some(permit) => Ok(permit),
        None => Err(crate::error::ApiError::too_many(
            "too_many_streams",
            format!(
                "this account already has {} open streams on this server; close one first",
                limits.value(&STREAMS, user_id).await
            ),
            5,
        )),
    }
}

/// The limits live streams declare.
pub const LIMITS: &[Limit] = &[TICKETS.count, STREAMS];

/// The stream kind that today's task-only forms name implicitly
/// (`{"op":"subscribe","task_id":…}`, `/v1/tasks/{id}/events`).
pub const TASK_STREAM: &str = "task";

/// The live routes' state.
#[derive(Clone, FromRef)]
pub struct Live {
    pub core: Core,
    /// `[live]`.
    pub settings: std::sync::Arc<settings::LiveSettings>,
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
