//! The HTTP kit every route module uses, knowing none of them: the core state
//! ([`Core`]), the layers around the whole router (request ids, tracing, body limit,
//! timeout, panic → JSON 500), extractors whose rejections are JSON 4xx answers (body,
//! query, API key, admin), security headers, pagination, idempotent POSTs, the health
//! routes, the client bundle the pages load ([`assets`]) and the base
//! of the OpenAPI document, and the server loop ([`server`]: header-read and idle
//! timeouts, a connection cap). `app` composes the routers of every module into one.

pub mod assets;
pub mod auth;
pub mod auth_failures;
pub mod headers;
pub mod health;
pub mod json;
pub mod openapi;
pub mod page;
pub mod query;
pub mod server;
pub mod settings;
pub mod state;

use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Request, Response};
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::error::ApiError;
use settings::ServerSettings;

pub use auth::{Admin, AuthUser, CallerKey};
pub use json::ApiJson;
pub use page::{IdPage, Page, PageQuery};
pub use query::ApiQuery;
pub use state::Core;

/// Wraps the composed routes: unknown paths answer a JSON 404, and every request gets
/// an id, a trace span, the body limit, the timeout and panic protection.
///
/// Requests under a `streaming` prefix (uploads, downloads) have no whole-request
/// deadline: their bodies may take minutes, and the streams bound idleness instead.
pub fn layered(routes: Router, server: &ServerSettings, streaming: Vec<&'static str>) -> Router {
    let timeout = server.request_timeout();
    let body_limit = server.body_limit_bytes;
    let streaming: std::sync::Arc<[&'static str]> = streaming.into();
    routes
        .fallback(|| async { ApiError::not_found("route") })
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(request_span)
                        .on_response(|res: &Response<_>, _: Duration, span: &tracing::Span| {
                            span.record(
                                "http.response.status_code",
                                i64::from(res.status().as_u16()),
                            );
                        }),
                )
                .layer(PropagateRequestIdLayer::x_request_id())
                .layer(CatchPanicLayer::custom(panic_response))
                .layer(axum::middleware::from_fn(
                    move |req: Request<axum::body::Body>, next: axum::middleware::Next| {
                        let streams = streaming.iter().any(|p| req.uri().path().starts_with(p));
                        async move {
                            if streams {
                                return next.run(req).await;
                            }
                            match tokio::time::timeout(timeout, next.run(req)).await {
                                Ok(resp) => resp,
                                Err(_) => {
                                    axum::response::IntoResponse::into_response(ApiError::timeout())
                                }
                            }
                        }
                    },
                )),
        )
        // Outermost: timeouts and panics answer with the headers too.
        .layer(axum::middleware::from_fn(headers::security_headers))
}

/// A request's span: named by its route (not its path, which holds ids), a server span
/// that continues the caller's trace when the request carries a `traceparent` (as its
/// child when callers are trusted, else by a link).
fn request_span<B>(req: &Request<B>) -> tracing::Span {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let id = header("x-request-id").unwrap_or("-");
    if !crate::traces::on() {
        // The log's span: no fields the logs do not need (every request pays for them).
        return tracing::info_span!("http", method = %req.method(), path = %req.uri().path(), request_id = %id, "http.response.status_code" = tracing::field::Empty);
    }
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or("unmatched", |m| m.as_str());
    let span = tracing::info_span!(
        "http",
        otel.name = %format_args!("{} {route}", req.method()),
        otel.kind = "server",
        path = %req.uri().path(),
        request_id = %id,
        "http.response.status_code" = tracing::field::Empty,
    );
    crate::traces::continue_caller(&span, header(crate::traces::TRACEPARENT));
    span
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response<axum::body::Body> {
    tracing::error!("request handler panicked");
    axum::response::IntoResponse::into_response(ApiError::internal(anyhow::anyhow!(
        "handler panicked"
    )))
}

/// Readiness probes give each dependency this long.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
