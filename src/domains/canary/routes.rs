//! `GET /v1/admin/canary`: the canary's state for an admin: its interval, the newest
//! round trip, pings overdue, and the newest pings.

use axum::extract::{FromRef, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::entity::Model;
use super::metrics::OVERDUE;
use super::store;
use crate::api::openapi::ErrorBody;
use crate::api::{Admin, ApiQuery, Core};
use crate::error::ApiError;

/// The canary routes' state.
#[derive(Clone, FromRef)]
pub struct Canary {
    pub core: Core,
    /// `canary.interval_ms` (0: the canary is off).
    pub interval_ms: u64,
}

pub fn routes(state: Canary) -> Router {
    Router::new()
        .route("/v1/admin/canary", get(show))
        .with_state(state)
}

/// One ping.
#[derive(Debug, Serialize, ToSchema)]
pub struct PingView {
    pub id: String,
    pub sent_at: chrono::DateTime<chrono::Utc>,
    /// Absent while it is on its way (or lost).
    pub received_at: Option<chrono::DateTime<chrono::Utc>>,
    pub latency_ms: Option<i64>,
}

impl From<Model> for PingView {
    fn from(m: Model) -> Self {
        PingView {
            id: m.id,
            sent_at: m.sent_at,
            received_at: m.received_at,
            latency_ms: m.latency_ms,
        }
    }
}

/// The canary at a glance.
#[derive(Debug, Serialize, ToSchema)]
pub struct CanaryView {
    /// Milliseconds between pings; 0 when the canary is off.
    pub interval_ms: u64,
    /// The newest ping that came back.
    pub last_round_trip: Option<PingView>,
    /// Pings sent more than 30 s ago that have not come back.
    pub overdue: u64,
    /// The newest pings, newest first.
    pub pings: Vec<PingView>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ShowParams {
    /// How many of the newest pings to list: 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u64>,
}

/// `GET /v1/admin/canary`.
#[utoipa::path(get, path = "/v1/admin/canary", operation_id = "show_canary", tag = "admin", security(("api_key" = [])),
    params(ShowParams),
    responses(
        (status = 200, description = "The canary's state", body = CanaryView),
        (status = 400, description = "Bad query", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin))]
pub(crate) async fn show(
    State(state): State<Canary>,
    _: Admin,
    ApiQuery(p): ApiQuery<ShowParams>,
) -> Result<Json<CanaryView>, ApiError> {
    let limit = crate::api::page::limit(p.limit)?;
    let (last, overdue) = store::health(&state.core.db, chrono::Utc::now() - OVERDUE).await?;
    let pings = store::recent(&state.core.db, limit).await?;
    Ok(Json(CanaryView {
        interval_ms: state.interval_ms,
        last_round_trip: last.map(PingView::from),
        overdue,
        pings: pings.into_iter().map(PingView::from).collect(),
    }))
}

/// The route's OpenAPI entries.
#[derive(utoipa::OpenApi)]
#[openapi(paths(show), components(schemas(CanaryView, PingView)))]
pub struct Doc;
