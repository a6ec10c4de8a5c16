//! Sales: admins create and list them; anyone signed in reads one.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{FlashSales, stock_down};
use crate::api::openapi::ErrorBody;
use crate::api::{Admin, ApiJson, ApiQuery, AuthUser, Page};
use crate::domains::flash_sale::store::{self, NewSale};
use crate::domains::flash_sale::view::SaleView;
use crate::error::ApiError;

#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SaleRequest {
    /// What is sold (1 to 200 characters).
    #[schema(min_length = 1, max_length = 200)]
    pub item: String,
    /// Price of one unit in the minor unit of `flash_sale.currency` (fen for CNY): what a
    /// payment for the order bills. At least 1: an order at 0 could never be paid and
    /// would be canceled at its deadline.
    #[schema(minimum = 1)]
    pub price: i64,
    /// Units for sale (1 to 1,000,000).
    #[schema(minimum = 1, maximum = 1000000)]
    pub stock: i32,
    /// Units one buyer may hold (1 or more); with 1 the database also holds every buyer
    /// to one order.
    #[schema(minimum = 1)]
    pub per_user_limit: i32,
    pub starts_at: DateTime<Utc>,
    /// After `starts_at`.
    pub ends_at: DateTime<Utc>,
}

/// `POST /v1/admin/flash-sales`: a new sale, loaded into the stock store at once.
#[utoipa::path(post, path = "/v1/admin/flash-sales", operation_id = "create_flash_sale", tag = "admin", security(("api_key" = [])),
    request_body = SaleRequest,
    responses(
        (status = 201, description = "The sale", body = SaleView),
        (status = 400, description = "Malformed JSON or unknown fields", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 422, description = "Invalid field (named in `field`)", body = ErrorBody)))]
pub(crate) async fn create(
    State(state): State<FlashSales>,
    _: Admin,
    ApiJson(req): ApiJson<SaleRequest>,
) -> Result<(StatusCode, Json<SaleView>), ApiError> {
    let item = req.item.trim();
    if item.is_empty() || item.chars().count() > 200 {
        return Err(ApiError::invalid("item", "must be 1 to 200 characters"));
    }
    if req.price < 1 {
        return Err(ApiError::invalid(
            "price",
            "must be at least 1 (a minor unit of the sale currency, e.g. 1 fen)",
        ));
    }
    if !(1..=1_000_000).contains(&req.stock) {
        return Err(ApiError::invalid("stock", "must be 1 to 1000000"));
    }
    if req.per_user_limit < 1 {
        return Err(ApiError::invalid("per_user_limit", "must be at least 1"));
    }
    if req.ends_at <= req.starts_at {
        return Err(ApiError::invalid("ends_at", "must be after starts_at"));
    }
    let sale = store::create_sale(
        &state.core.db,
        NewSale {
            item: item.to_owned(),
            price: req.price,
            stock: req.stock,
            per_user_limit: req.per_user_limit,
            starts_at: req.starts_at,
            ends_at: req.ends_at,
        },
    )
    .await?;
    state
        .sales
        .warm(&state.core.db, &sale)
        .await
        .map_err(stock_down)?;
    let remaining = i64::from(sale.stock);
    Ok((
        StatusCode::CREATED,
        Json(SaleView::new(
            sale,
            Some(remaining),
            &state.sales.settings.currency,
        )),
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u64>,
}

/// `GET /v1/admin/flash-sales`: every sale, newest first.
#[utoipa::path(get, path = "/v1/admin/flash-sales", operation_id = "list_flash_sales", tag = "admin", security(("api_key" = [])),
    params(ListParams),
    responses(
        (status = 200, description = "Sales, newest first", body = Page<SaleView>),
        (status = 400, description = "Bad query", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin))]
pub(crate) async fn list(
    State(state): State<FlashSales>,
    _: Admin,
    ApiQuery(p): ApiQuery<ListParams>,
) -> Result<Json<Page<SaleView>>, ApiError> {
    let limit = crate::api::page::limit(p.limit)?;
    let sales = store::list_sales(&state.core.db, p.cursor.as_deref(), limit).await?;
    let mut views = Vec::with_capacity(sales.len());
    for s in sales {
        let remaining = state.sales.stock.remaining(&s.id).await.ok().flatten();
        views.push(SaleView::new(s, remaining, &state.sales.settings.currency));
    }
    Ok(Json(Page::new(views, limit, |v| v.id.clone())))
}

/// `GET /v1/flash-sales/{id}`: the sale, its state and the units left.
#[utoipa::path(get, path = "/v1/flash-sales/{id}", operation_id = "show_flash_sale", tag = "flash sales", security(("api_key" = [])),
    params(("id" = String, Path, description = "Sale id")),
    responses(
        (status = 200, description = "The sale", body = SaleView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such sale", body = ErrorBody)))]
pub(crate) async fn show(
    State(state): State<FlashSales>,
    _: AuthUser,
    Path(id): Path<String>,
) -> Result<Json<SaleView>, ApiError> {
    let sale = store::get_sale(&state.core.db, &id)
        .await?
        .ok_or(ApiError::not_found("flash sale"))?;
    let remaining = state.sales.stock.remaining(&sale.id).await.ok().flatten();
    Ok(Json(SaleView::new(
        sale,
        remaining,
        &state.sales.settings.currency,
    )))
}
