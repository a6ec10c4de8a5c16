//! Orders: intake (a unit taken, the order queued), the buyer's orders.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use super::FlashSales;
use crate::api::openapi::ErrorBody;
use crate::api::{ApiQuery, AuthUser, Page};
use crate::domains::flash_sale::OrderStatus;
use crate::domains::flash_sale::intake::IntakeError;
use crate::domains::flash_sale::limits;
use crate::domains::flash_sale::store;
use crate::domains::flash_sale::view::{Accepted, OrderView};
use crate::error::ApiError;
use crate::idempotency::IdempotencyKey;

/// `POST /v1/flash-sales/{id}/orders`: take one unit and queue the order.
#[utoipa::path(post, path = "/v1/flash-sales/{id}/orders", tag = "flash sales", security(("api_key" = [])),
    params(("id" = String, Path, description = "Sale id"),
        ("Idempotency-Key" = Option<String>, Header, pattern = "^[\\x21-\\x7E]{1,128}$",
        description = "1 to 128 visible ASCII characters: a repeat names the same order and takes no second unit")),
    responses(
        (status = 202, description = "A unit is yours; the order is QUEUED (`Location` names it)", body = Accepted),
        (status = 400, description = "A malformed `Idempotency-Key` (named in `field`)", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such sale", body = ErrorBody),
        (status = 409, description = "`sold_out`, `limit_reached` or `not_active`", body = ErrorBody),
        (status = 429, description = "`rate_limited`: orders per second of this account (`Retry-After`)", body = ErrorBody),
        (status = 503, description = "The broker or the stock store is away; nothing was taken (`Retry-After`)", body = ErrorBody)))]
pub(crate) async fn order(
    State(state): State<FlashSales>,
    AuthUser(user): AuthUser,
    IdempotencyKey(key): IdempotencyKey,
    Path(sale_id): Path<String>,
) -> Result<Response, ApiError> {
    state.core.limits.take(&limits::ORDERS, &user.id).await?;
    let taken = state
        .sales
        .take_order(
            &state.core.db,
            &state.publisher,
            &user.id,
            &sale_id,
            key.as_deref(),
        )
        .await?;
    Ok(accepted(taken.order_id, taken.status))
}

impl From<IntakeError> for ApiError {
    fn from(e: IntakeError) -> Self {
        match e {
            IntakeError::NoSuchSale => ApiError::not_found("flash sale"),
            IntakeError::SoldOut | IntakeError::LimitReached | IntakeError::NotActive => {
                ApiError::refused(e.code(), e.to_string())
            }
            IntakeError::Unavailable(message) => ApiError::retry_later(message, 1),
            IntakeError::Db(e) => e.into(),
        }
    }
}

fn accepted(order_id: String, status: OrderStatus) -> Response {
    let location = HeaderValue::from_str(&format!("/v1/orders/{order_id}")).ok();
    let mut resp = (StatusCode::ACCEPTED, Json(Accepted { order_id, status })).into_response();
    if let Some(l) = location {
        resp.headers_mut().insert(header::LOCATION, l);
    }
    resp
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OrderListParams {
    /// Only orders in this status (`UNPAID`, `PAID`, `CANCELED`).
    #[param(pattern = "^(UNPAID|PAID|CANCELED)$")]
    pub status: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u64>,
}

/// `GET /v1/orders`: the caller's orders, newest first.
#[utoipa::path(get, path = "/v1/orders", tag = "flash sales", security(("api_key" = [])),
    params(OrderListParams),
    responses(
        (status = 200, description = "The caller's orders, newest first", body = Page<OrderView>),
        (status = 400, description = "Bad query", body = ErrorBody),
        crate::api::openapi::Unauthorized))]
pub(crate) async fn list_orders(
    State(state): State<FlashSales>,
    AuthUser(user): AuthUser,
    ApiQuery(p): ApiQuery<OrderListParams>,
) -> Result<Json<Page<OrderView>>, ApiError> {
    let limit = crate::api::page::limit(p.limit)?;
    let status = match p.status.as_deref() {
        None => None,
        Some(s) => Some(
            OrderStatus::parse(&s.to_ascii_uppercase())
                .filter(|s| *s != OrderStatus::Queued)
                .ok_or_else(|| {
                    ApiError::bad_request("status", "must be UNPAID, PAID or CANCELED")
                })?,
        ),
    };
    let orders =
        store::list_orders(&state.core.db, &user.id, status, p.cursor.as_deref(), limit).await?;
    let currency = &state.sales.settings.currency;
    let views = orders
        .into_iter()
        .map(|o| OrderView::new(o, currency))
        .collect();
    Ok(Json(Page::new(views, limit, |v: &OrderView| v.id.clone())))
}

/// `GET /v1/orders/{id}`.
#[utoipa::path(get, path = "/v1/orders/{id}", tag = "flash sales", security(("api_key" = [])),
    params(("id" = String, Path, description = "Order id")),
    responses(
        (status = 200, description = "The order", body = OrderView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such order of the caller's (a QUEUED order is not written yet)", body = ErrorBody)))]
pub(crate) async fn read_order(
    State(state): State<FlashSales>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<OrderView>, ApiError> {
    match store::get_order(&state.core.db, &id).await? {
        Some(o) if user.can_see(&o.user_id) => {
            Ok(Json(OrderView::new(o, &state.sales.settings.currency)))
        }
        _ => Err(ApiError::not_found("order")),
    }
}
