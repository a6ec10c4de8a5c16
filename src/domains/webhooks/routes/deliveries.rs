//! An endpoint's delivery log.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::Webhooks;
use crate::api::openapi::ErrorBody;
use crate::api::{ApiQuery, AuthUser, IdPage, Page};
use crate::db::StoredName as _;
use crate::domains::webhooks::entity::DeliveryStatus;
use crate::domains::webhooks::store::{self, StoreError};
use crate::domains::webhooks::view::DeliveryView;
use crate::error::ApiError;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// Only deliveries in this state: `PENDING`, `SUCCEEDED` or `FAILED`.
    #[param(pattern = "^(PENDING|SUCCEEDED|FAILED)$")]
    status: Option<String>,
    /// `next_cursor` of the previous page.
    #[param(pattern = "^[0-9A-Za-z-]{1,64}$")]
    cursor: Option<String>,
    /// Page size, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u64>,
}

/// `GET /v1/webhooks/endpoints/{id}/deliveries`: newest first, each with its latest
/// attempt (status code, the answer's first bytes, latency).
#[utoipa::path(get, path = "/v1/webhooks/endpoints/{id}/deliveries", operation_id = "list_webhook_deliveries", tag = "webhooks", security(("api_key" = [])),
    params(("id" = String, Path, description = "Endpoint id"), ListQuery),
    responses(
        (status = 200, description = "The endpoint's deliveries, newest first", body = Page<DeliveryView>),
        (status = 400, description = "Bad status, limit or cursor (named in `field`)", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such endpoint of the caller's", body = ErrorBody)))]
pub(crate) async fn list(
    State(state): State<Webhooks>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<axum::Json<Page<DeliveryView>>, ApiError> {
    let page = IdPage::new(q.limit, q.cursor)?;
    let limit = page.limit;
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(DeliveryStatus::parse(s).ok_or_else(|| {
            ApiError::bad_request(
                "status",
                format!("`{s}` is not PENDING, SUCCEEDED or FAILED"),
            )
        })?),
    };
    let e = state.endpoint(&user.id, &id).await?;
    let rows = store::deliveries(&state.core.db, &e.id, status, page.cursor(), limit).await?;
    let items: Vec<DeliveryView> = rows.into_iter().map(Into::into).collect();
    Ok(axum::Json(Page::new(items, limit, |d| d.id.clone())))
}

/// `GET /v1/webhooks/endpoints/{id}/deliveries/{delivery}`: with every attempt (`log`).
#[utoipa::path(get, path = "/v1/webhooks/endpoints/{id}/deliveries/{delivery}", operation_id = "show_webhook_delivery", tag = "webhooks", security(("api_key" = [])),
    params(("id" = String, Path, description = "Endpoint id"), ("delivery" = String, Path, description = "Delivery id")),
    responses(
        (status = 200, description = "The delivery and its attempts", body = DeliveryView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such endpoint or delivery of the caller's", body = ErrorBody)))]
pub(crate) async fn read(
    State(state): State<Webhooks>,
    AuthUser(user): AuthUser,
    Path((id, delivery)): Path<(String, String)>,
) -> Result<axum::Json<DeliveryView>, ApiError> {
    let e = state.endpoint(&user.id, &id).await?;
    let (d, attempts) = store::delivery(&state.core.db, &e.id, &delivery)
        .await?
        .ok_or(ApiError::not_found("delivery"))?;
    let mut view = DeliveryView::from(d);
    view.log = Some(attempts.into_iter().map(Into::into).collect());
    Ok(axum::Json(view))
}

/// `POST /v1/webhooks/endpoints/{id}/deliveries/{delivery}/retry`: sends a finished
/// delivery (answered or given up) again, with its `webhook-id`; retried on the usual
/// schedule if it fails.
#[utoipa::path(post, path = "/v1/webhooks/endpoints/{id}/deliveries/{delivery}/retry", operation_id = "retry_webhook_delivery", tag = "webhooks", security(("api_key" = [])),
    params(("id" = String, Path, description = "Endpoint id"), ("delivery" = String, Path, description = "Delivery id")),
    responses(
        (status = 202, description = "On its way again", body = DeliveryView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such endpoint or delivery of the caller's", body = ErrorBody),
        (status = 409, description = "`delivery_pending`: it is still being attempted; `endpoint_disabled`: enable the endpoint first", body = ErrorBody),
        (status = 429, description = "`rate_limited`: over `webhook_sends_per_min` (test events and manual retries); see Retry-After", body = ErrorBody)))]
pub(crate) async fn retry(
    State(state): State<Webhooks>,
    AuthUser(user): AuthUser,
    Path((id, delivery)): Path<(String, String)>,
) -> Result<(StatusCode, axum::Json<DeliveryView>), ApiError> {
    let e = state.endpoint(&user.id, &id).await?;
    if !e.enabled {
        return Err(ApiError::refused(
            "endpoint_disabled",
            "the endpoint is disabled: enable it (PATCH enabled=true) first".into(),
        ));
    }
    // A retry that cannot send (no such delivery, or one still being attempted) is
    // answered before the tenant's send budget is spent; the retry's own transaction
    // checks again, so a delivery that changed in between is still refused there.
    match store::delivery_status(&state.core.db, &e.id, &delivery).await? {
        None => return Err(ApiError::not_found("delivery")),
        Some(DeliveryStatus::Pending) => return Err(still_pending()),
        Some(_) => {}
    }
    state
        .core
        .limits
        .take(&super::super::limits::SENDS, &user.id)
        .await?;
    let give_up = state.settings.give_up();
    let d = store::retry(&state.core.db, &e.id, &delivery, give_up)
        .await
        .map_err(|err| match err {
            StoreError::StillPending => still_pending(),
            StoreError::Db(e) => e.into(),
            other => ApiError::internal(other.into()),
        })?
        .ok_or(ApiError::not_found("delivery"))?;
    state.core.relay.notify();
    Ok((StatusCode::ACCEPTED, axum::Json(d.into())))
}

fn still_pending() -> ApiError {
    ApiError::refused(
        "delivery_pending",
        "the delivery is still being attempted".into(),
    )
}
