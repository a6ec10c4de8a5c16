//! The console and its admin API (admins only; anyone else gets 403):
//!
//! - `GET /ops`: the page (embedded; it signs in with an admin key kept in the tab)
//! - `GET /v1/admin/ops`: the latest [`Snapshot`]
//! - `GET /v1/admin/ops/stream`: Server-Sent Events, a `snapshot` event per sample
//! - `GET /v1/admin/alerts`: active alerts and the latest episodes
//! - `PUT /v1/admin/queues/{queue}/concurrency`: a queue's prefetch, changed at run time

use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::extract::Path;
use axum::extract::{FromRef, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::routing::{get, put};
use futures::Stream;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::alerts;
use super::board::Board;
use super::snapshot::{AlertsView, Snapshot};
use crate::api::openapi::ErrorBody;
use crate::api::{Admin, ApiJson, Core};
use crate::consumer::concurrency;
use crate::error::ApiError;

#[derive(Clone, FromRef)]
pub struct Ops {
    pub core: Core,
    pub board: Board,
    /// The page, with this deployment's trace link template in it ([`page_with`]).
    pub page: ConsolePage,
}

/// The console's page, built once at start-up; each request shares its bytes.
#[derive(Clone)]
pub struct ConsolePage(axum::body::Bytes);

/// The console's page with `trace_link` (`[telemetry] trace_link`, a URL template with
/// `{trace_id}`; empty: trace ids are shown as text) in it.
pub fn page_with(trace_link: &str) -> ConsolePage {
    // A JSON string inside a script: `<` escaped so no value can close the element.
    let literal = serde_json::to_string(trace_link)
        .unwrap_or_else(|_| "\"\"".into())
        .replace('<', "\\u003c");
    ConsolePage(
        include_str!("page.html")
            .replacen("\"__TRACE_LINK__\"", &literal, 1)
            .into(),
    )
}

pub fn routes(state: Ops) -> Router {
    Router::new()
        .route("/ops", get(page))
        .route("/v1/admin/ops", get(snapshot))
        .route("/v1/admin/ops/stream", get(stream))
        .route("/v1/admin/alerts", get(list_alerts))
        .route("/v1/admin/queues/{queue}/concurrency", put(set_concurrency))
        .with_state(state)
}

#[derive(utoipa::OpenApi)]
#[openapi(paths(page, snapshot, stream, list_alerts, set_concurrency))]
pub struct Doc;

/// One Server-Sent Event of the console's stream.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // documents the wire format; the stream writes it with axum's `Event`
pub struct OpsFrame {
    /// Always `snapshot`.
    event: String,
    /// JSON: a [`Snapshot`], the body of `GET /v1/admin/ops`.
    data: String,
}

/// `GET /ops`: the operations console.
#[utoipa::path(get, path = "/ops", tag = "ops",
    responses((status = 200, description = "The operations console (HTML; signs in with an admin API key)", content_type = "text/html")))]
pub(crate) async fn page(
    State(ConsolePage(page)): State<ConsolePage>,
) -> axum::response::Html<axum::body::Bytes> {
    // Built once at start-up; each request shares it.
    axum::response::Html(page)
}

#[utoipa::path(get, path = "/v1/admin/ops", tag = "admin", operation_id = "ops_snapshot",
    security(("api_key" = [])),
    responses(
        (status = 200, description = "Queues, rates, history, the domains' panels, dead letters and alerts as of the latest sample", body = Snapshot),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 503, description = "No sample taken yet (the server just started)", body = ErrorBody)))]
pub(crate) async fn snapshot(
    State(board): State<Board>,
    _: Admin,
) -> Result<axum::Json<std::sync::Arc<Snapshot>>, ApiError> {
    let latest = board.latest().ok_or_else(|| {
        ApiError::unavailable("the ops board has not sampled yet; try again in a moment".into())
    })?;
    // The shared snapshot, serialized as it is (no copy per request).
    Ok(axum::Json(latest))
}

#[utoipa::path(get, path = "/v1/admin/ops/stream", tag = "admin", operation_id = "ops_stream",
    security(("api_key" = [])),
    responses(
        (status = 200, description = "Server-Sent Events: a `snapshot` event (the body of `GET /v1/admin/ops`) at each sample", content_type = "text/event-stream", body = OpsFrame),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin))]
pub(crate) async fn stream(
    State(state): State<Ops>,
    _: Admin,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let mut watch = state.board.watch();
    // The current snapshot at once, then each new one.
    watch.mark_changed();
    let shutdown = state.core.shutdown.clone();
    let stream = futures::stream::unfold((watch, shutdown), |(mut watch, shutdown)| async move {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return None,
                changed = watch.changed() => changed.ok()?,
            }
            let Some(snapshot) = watch.borrow_and_update().clone() else {
                continue;
            };
            let event = SseEvent::default()
                .event("snapshot")
                .json_data(snapshot.as_ref())
                .unwrap_or_else(|_| SseEvent::default().comment("snapshot not encoded"));
            return Some((Ok(event), (watch, shutdown)));
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

#[utoipa::path(get, path = "/v1/admin/alerts", tag = "admin", operation_id = "list_alerts",
    security(("api_key" = [])),
    responses(
        (status = 200, description = "Alerts firing now, and the latest 50 episodes newest first", body = AlertsView),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin))]
pub(crate) async fn list_alerts(
    State(core): State<Core>,
    _: Admin,
) -> Result<axum::Json<AlertsView>, ApiError> {
    Ok(axum::Json(alerts::view(&core.db).await?))
}

/// A queue's concurrency: deliveries each of its consumer processes takes at once.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Concurrency {
    /// 1 to 10000.
    #[schema(minimum = 1, maximum = 10000)]
    #[serde(deserialize_with = "crate::whole::u32")]
    pub prefetch: u32,
}

#[utoipa::path(put, path = "/v1/admin/queues/{queue}/concurrency", tag = "admin", operation_id = "set_queue_concurrency",
    security(("api_key" = [])),
    params(("queue" = String, Path, description = "A queue key (`ai.short`, …)")),
    request_body = Concurrency,
    responses(
        (status = 200, description = "Stored and audited; every consumer process of the queue follows within `consumer.settings_poll_ms`", body = Concurrency),
        (status = 400, description = "Prefetch out of range (named in `field`)", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such queue", body = ErrorBody),
        (status = 422, description = "An unknown field or a value of the wrong type (named in `field`)", body = ErrorBody)))]
pub(crate) async fn set_concurrency(
    State(core): State<Core>,
    Admin(user): Admin,
    Path(queue): Path<String>,
    ApiJson(body): ApiJson<Concurrency>,
) -> Result<axum::Json<Concurrency>, ApiError> {
    let spec = core
        .broker
        .topology()
        .queue_spec(&queue)
        .ok_or(ApiError::not_found("queue"))?;
    let prefetch = u16::try_from(body.prefetch)
        .ok()
        .filter(|p| (1..=concurrency::MAX).contains(p))
        .ok_or_else(|| {
            ApiError::bad_request("prefetch", format!("must be 1 to {}", concurrency::MAX))
        })?;
    concurrency::set(&core.db, spec.key, prefetch, &format!("user:{}", user.id)).await?;
    Ok(axum::Json(Concurrency {
        prefetch: u32::from(prefetch),
    }))
}
