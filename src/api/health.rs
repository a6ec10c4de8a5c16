//! Liveness, readiness and metrics.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use axum::extract::{FromRef, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::{Core, PROBE_TIMEOUT};
use crate::error::ApiError;
use crate::telemetry::gauges::Gauge;

/// The health routes' state: the core, the dedupe store `/readyz` pings, every entry's
/// gauges for `/metrics` and their dependencies' probes.
#[derive(Clone, FromRef)]
pub struct Health {
    pub core: Core,
    pub dedupe: Arc<dyn crate::dedupe::DedupeStore>,
    pub gauges: Arc<[Gauge]>,
    pub probes: Arc<[Probe]>,
}

type Check = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// An optional dependency a domain brings (the search backend): `/readyz` lists it
/// under `checks`, `/metrics` exports `conveyor_dependency_up{dependency}`. Failing, it
/// makes the instance "degraded" (200), never unready: the API keeps taking work.
#[derive(Clone)]
pub struct Probe {
    pub name: &'static str,
    check: Check,
}

impl Probe {
    pub fn optional(
        name: &'static str,
        check: impl Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync + 'static,
    ) -> Self {
        Probe {
            name,
            check: Arc::new(check),
        }
    }
}

/// Runs every probe at once (each within [`PROBE_TIMEOUT`]) and exports its state.
async fn run_probes(probes: &[Probe]) -> Vec<(&Probe, Result<(), String>)> {
    let results = futures::future::join_all(probes.iter().map(|p| probe((p.check)()))).await;
    probes
        .iter()
        .zip(results)
        .map(|(p, r)| {
            metrics::gauge!("conveyor_dependency_up", "dependency" => p.name).set(if r.is_ok() {
                1.0
            } else {
                0.0
            });
            (p, r)
        })
        .collect()
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
/// Optional dependencies (the search backend) are listed too; one failing makes the
/// status `degraded`, still 200.
#[utoipa::path(get, path = "/readyz", tag = "health", responses(
    (status = 200, description = "Every required dependency answered: `{\"status\":\"ready\",\"checks\":{\"database\":\"ok\",…}}` (`degraded` when an optional one did not); with the operators' token also `broker_nodes`: the node (`host:port`) each live broker connection uses", body = Object),
    (status = 503, description = "Not ready; `checks` names the failed dependency", body = Object)))]
pub async fn readyz(State(state): State<Health>, headers: HeaderMap) -> impl IntoResponse {
    let core = &state.core;
    // Why a dependency failed (hosts, error text) is for operators only.
    let detail = is_operator(&core.server.ops_token, &headers);
    let (db, broker, dedupe, extra) = tokio::join!(
        probe(crate::db::ping(&core.db)),
        probe(core.broker.ping()),
        probe(state.dedupe.ping()),
        run_probes(&state.probes),
    );
    // The node each broker connection uses (after the ping reconnected), for operators.
    let nodes: serde_json::Map<String, serde_json::Value> = if detail {
        let nodes = core.broker.nodes().await;
        nodes
            .into_iter()
            .map(|(r, n)| (r.into(), n.into()))
            .collect()
    } else {
        serde_json::Map::new()
    };
    let mut checks = serde_json::Map::new();
    let mut failed = Vec::new();
    let mut degraded = false;
    let results = [
        ("database", true, db),
        ("broker", true, broker),
        ("dedupe", true, dedupe),
    ]
    .into_iter()
    .chain(extra.into_iter().map(|(p, r)| (p.name, false, r)));
    for (name, required, result) in results {
        match result {
            Ok(()) => {
                checks.insert(name.into(), json!("ok"));
            }
            Err(e) => {
                tracing::warn!(dependency = name, error = %e, "readiness check failed");
                let shown = if detail { e } else { "unavailable".to_owned() };
                checks.insert(name.into(), json!({ "error": shown }));
                if required {
                    failed.push(name);
                } else {
                    degraded = true;
                }
            }
        }
    }
    let (code, mut body) = if failed.is_empty() {
        let status = if degraded { "degraded" } else { "ready" };
        (
            StatusCode::OK,
            json!({ "status": status, "checks": checks }),
        )
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({
                "status": "unavailable",
                "error": { "code": "unavailable", "message": format!("not ready: {}", failed.join(", ")) },
                "checks": checks,
            }),
        )
    };
    if !nodes.is_empty() {
        body["broker_nodes"] = nodes.into();
    }
    (code, Json(body))
}

/// `GET /metrics`: Prometheus text format, gauges refreshed first.
#[utoipa::path(get, path = "/metrics", tag = "health",
    responses(
        (status = 200, description = "Prometheus text format", body = String, content_type = "text/plain"),
        (status = 401, description = "`server.ops_token` is set and the request does not bear it", body = crate::api::openapi::ErrorBody)))]
pub async fn metrics(
    State(state): State<Health>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    let core = &state.core;
    let token = &core.server.ops_token;
    if !token.is_empty() && !is_operator(token, &headers) {
        return Err(ApiError::unauthorized());
    }
    run_probes(&state.probes).await;
    crate::telemetry::gauges::sample(
        &core.db,
        core.broker.as_ref(),
        &core.relay,
        &state.gauges,
        PROBE_TIMEOUT,
    )
    .await;
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        crate::telemetry::metrics().render(),
    ))
}

/// Whether the request bears the operators' token (compared in constant time); never
/// when no token is configured.
fn is_operator(token: &str, headers: &HeaderMap) -> bool {
    use subtle::ConstantTimeEq as _;
    if token.is_empty() {
        return false;
    }
    super::auth::bearer(headers)
        .is_some_and(|given| bool::from(given.as_bytes().ct_eq(token.as_bytes())))
}
