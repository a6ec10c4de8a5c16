//! HTTP plumbing shared by every route: the router and its layers (request ids,
//! tracing, body limit, timeout, panic → JSON 500), the JSON extractor whose rejections
//! are JSON 4xx answers, and the API-key extractor.

pub mod auth;
pub mod health;
pub mod idempotency;
pub mod json;
pub mod openapi;
pub mod page;
pub mod query;

use std::time::Duration;

use axum::Router;
use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use axum::http::{Request, Response};
use axum::routing::get;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::app::AppState;
use crate::error::ApiError;

pub use auth::{Admin, AuthUser};
pub use json::ApiJson;
pub use page::Page;
pub use query::ApiQuery;

/// The whole HTTP API.
pub fn router(state: AppState) -> Router {
    let timeout = state.settings.request_timeout();
    let body_limit = state.settings.server.body_limit_bytes;
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .route("/v1/me", get(crate::users::routes::me))
        .merge(crate::domains::routes())
        .merge(crate::live::routes())
        .merge(crate::dead_letters::routes::routes())
        .merge(openapi::routes())
        .fallback(|| async { ApiError::NotFound("route") })
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
                .layer(
                    TraceLayer::new_for_http().make_span_with(|req: &Request<_>| {
                        let id = req
                            .headers()
                            .get("x-request-id")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("-");
                        tracing::info_span!("http", method = %req.method(), path = %req.uri().path(), request_id = %id)
                    }),
                )
                .layer(PropagateRequestIdLayer::x_request_id())
                .layer(CatchPanicLayer::custom(panic_response))
                .layer(HandleErrorLayer::new(|_: tower::BoxError| async { ApiError::Timeout }))
                .layer(tower::timeout::TimeoutLayer::new(timeout)),
        )
        .with_state(state)
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response<axum::body::Body> {
    tracing::error!("request handler panicked");
    axum::response::IntoResponse::into_response(ApiError::Internal(anyhow::anyhow!(
        "handler panicked"
    )))
}

/// Readiness probes give each dependency this long.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
