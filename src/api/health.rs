//! Liveness, readiness and metrics.

use std::future::Future;
use std::sync::Arc;

use axum::extract::{FromRef, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::{Core, PROBE_TIMEOUT};
use crate::telemetry::gauges::Gauge;

/// The health routes' state: the core and the domains' gauges for `/metrics`.
#[derive(Clone, FromRef)]
pub struct Health {
    pub core: Core,
    pub gauges: Arc<[Gauge]>,
}

pub fn routes(state: Health) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

/// The routes' OpenAPI entries.
#[derive(utoipa::OpenApi)]
#[openapi(paths(healthz, readyz, metrics))]
pub struct Doc;

/// `GET /healthz`: the process is up.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, description = "The process is up: `{\"status\":\"ok\"}`", body = Object)))]
pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

async fn probe<E: std::fmt::Display>(f: impl Future<Output = Result<(), E>>) -> Result<(), String> {
    match tokio::time::timeout(PROBE_TIMEOUT, f).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {PROBE_TIMEOUT:?}")),
    }
}

/// `GET /readyz`: database, broker and dedupe store answer; 503 naming those that don't.
#[utoipa::path(get, path = "/readyz", tag = "health", responses(
    (status = 200, description = "Every dependency answered: `{\"status\":\"ready\",\"checks\":{\"database\":\"ok\",…}}`", body = Object),
    (status = 503, description = "Not ready; `checks` names the failed dependency", body = Object)))]
pub async fn readyz(State(state): State<Core>) -> impl IntoResponse {
    let (db, broker, dedupe) = tokio::join!(
        probe(crate::db::ping(&state.db)),
        probe(state.broker.ping()),
        probe(state.dedupe.ping()),
    );
    let mut checks = serde_json::Map::new();
    let mut failed = Vec::new();
    for (name, result) in [("database", db), ("broker", broker), ("dedupe", dedupe)] {
        match result {
            Ok(()) => {
                checks.insert(name.into(), json!("ok"));
            }
            Err(e) => {
                checks.insert(name.into(), json!({ "error": e }));
                failed.push(name);
            }
        }
    }
    if failed.is_empty() {
        (
            StatusCode::OK,
            Json(json!({ "status": "ready", "checks": checks })),
        )
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "status": "unavailable",
                "error": { "code": "unavailable", "message": format!("not ready: {}", failed.join(", ")) },
                "checks": checks,
            })),
        )
    }
}

/// `GET /metrics`: Prometheus text format, gauges refreshed first.
#[utoipa::path(get, path = "/metrics", tag = "health",
    responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain")))]
pub async fn metrics(State(state): State<Health>) -> impl IntoResponse {
    let core = &state.core;
    crate::telemetry::gauges::sample(
        &core.db,
        core.broker.as_ref(),
        &core.relay,
        &state.gauges,
        PROBE_TIMEOUT,
    )
    .await;
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        crate::telemetry::metrics().render(),
    )
}
