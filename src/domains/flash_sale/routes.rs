//! HTTP: sales (admins create and list them; anyone signed in reads one), order intake,
//! the buyer's orders, and the admin's mark-paid and reconcile.
//!
//! Intake does no database work: one Lua script takes the unit (or says why not), the
//! order message is published with a confirm, and the answer is 202 QUEUED. If the
//! publish fails the unit goes back and the buyer gets 503 with `Retry-After`.

use std::sync::Arc;

use axum::extract::{FromRef, Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use utoipa::{IntoParams, ToSchema};

use super::OrderStatus;
use super::messages::{CREATE_ORDER, CreateOrder, publish_events};
use super::publisher::Publisher;
use super::queues::ORDERS_CREATE;
use super::service::{Reconciled, Sales};
use super::stock::Take;
use super::store::{self, NewSale, Order, Paid, Sale};
use crate::api::idempotency::IdempotencyKey;
use crate::api::openapi::ErrorBody;
use crate::api::{Admin, ApiJson, ApiQuery, AuthUser, Core, Page};
use crate::broker::{Envelope, Outgoing, Target};
use crate::error::ApiError;

/// The flash-sale routes' state.
#[derive(Clone, FromRef)]
pub struct FlashSales {
    pub core: Core,
    pub sales: Arc<Sales>,
    pub publisher: Publisher,
}

pub fn routes(state: FlashSales) -> Router {
    Router::new()
        .route("/v1/admin/flash-sales", post(create).get(list))
        .route("/v1/admin/flash-sales/{id}/reconcile", post(reconcile))
        .route("/v1/flash-sales/{id}", get(show))
        .route("/v1/flash-sales/{id}/orders", post(order))
        .route("/v1/orders", get(list_orders))
        .route("/v1/orders/{id}", get(read_order))
        .route("/v1/admin/orders/{id}/mark-paid", post(mark_paid))
        .with_state(state)
}

/// The routes' OpenAPI entries.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(create, list, show, order, list_orders, read_order, mark_paid, reconcile),
    tags((name = "flash sales", description = "Flash-sale orders: Redis stock, orders written by consumers, 30-minute unpaid cancel"))
)]
pub struct Doc;

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

/// Where a sale stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SaleState {
    Upcoming,
    Active,
    SoldOut,
    Ended,
}

/// What clients see of a sale.
#[derive(Debug, Serialize, ToSchema)]
pub struct SaleView {
    pub id: String,
    pub item: String,
    /// In the minor unit of `currency`.
    pub price: i64,
    /// ISO 4217 (`flash_sale.currency`).
    pub currency: String,
    pub stock: i32,
    pub per_user_limit: i32,
    /// Units left to take (from the stock store; stock − held orders when it is cold).
    pub remaining: i64,
    pub state: SaleState,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

impl SaleView {
    fn new(s: Sale, remaining: Option<i64>, currency: &str) -> Self {
        let remaining = remaining.unwrap_or(i64::from(s.stock - s.sold)).max(0);
        let now = Utc::now();
        let state = if now < s.starts_at {
            SaleState::Upcoming
        } else if now >= s.ends_at {
            SaleState::Ended
        } else if remaining == 0 {
            SaleState::SoldOut
        } else {
            SaleState::Active
        };
        SaleView {
            id: s.id,
            item: s.item,
            price: s.price,
            currency: currency.to_owned(),
            stock: s.stock,
            per_user_limit: s.per_user_limit,
            remaining,
            state,
            starts_at: s.starts_at,
            ends_at: s.ends_at,
            created_at: s.created_at,
        }
    }
}

/// What a buyer sees of an order.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrderView {
    pub id: String,
    pub sale_id: String,
    pub status: OrderStatus,
    /// In the minor unit of `currency`.
    pub price: i64,
    /// ISO 4217 (`flash_sale.currency`).
    pub currency: String,
    /// Pay before this, or the order is canceled and its unit goes back.
    pub pay_by: DateTime<Utc>,
    pub payment_ref: Option<String>,
    /// A payment arrived after the cancel: it is to be refunded, the order stays canceled.
    pub paid_after_cancel: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl OrderView {
    pub fn new(o: Order, currency: &str) -> Self {
        OrderView {
            currency: currency.to_owned(),
            paid_after_cancel: o.late_payment_ref.is_some(),
            id: o.id,
            sale_id: o.sale_id,
            status: o.status,
            price: o.price,
            pay_by: o.pay_by,
            payment_ref: o.payment_ref,
            created_at: o.created_at,
            updated_at: o.updated_at,
        }
    }
}

/// The intake answer: the order is on its way.
#[derive(Debug, Serialize, ToSchema)]
pub struct Accepted {
    pub order_id: String,
    pub status: OrderStatus,
}

fn stock_down(e: impl std::fmt::Display) -> ApiError {
    tracing::warn!(error = %e, "flash-sale stock store unavailable");
    ApiError::RetryLater {
        message: "the stock store is unavailable".into(),
        retry_after_secs: 1,
    }
}

/// `POST /v1/admin/flash-sales`: a new sale, loaded into the stock store at once.
#[utoipa::path(post, path = "/v1/admin/flash-sales", tag = "admin", security(("api_key" = [])),
    request_body = SaleRequest,
    responses(
        (status = 201, description = "The sale", body = SaleView),
        (status = 400, description = "Malformed JSON or unknown fields", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
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
#[utoipa::path(get, path = "/v1/admin/flash-sales", tag = "admin", security(("api_key" = [])),
    params(ListParams),
    responses(
        (status = 200, description = "Sales, newest first", body = Page<SaleView>),
        (status = 400, description = "Bad query", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody)))]
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
#[utoipa::path(get, path = "/v1/flash-sales/{id}", tag = "flash sales", security(("api_key" = [])),
    params(("id" = String, Path, description = "Sale id")),
    responses(
        (status = 200, description = "The sale", body = SaleView),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 404, description = "No such sale", body = ErrorBody)))]
pub(crate) async fn show(
    State(state): State<FlashSales>,
    _: AuthUser,
    Path(id): Path<String>,
) -> Result<Json<SaleView>, ApiError> {
    let sale = store::get_sale(&state.core.db, &id)
        .await?
        .ok_or(ApiError::NotFound("flash sale"))?;
    let remaining = state.sales.stock.remaining(&sale.id).await.ok().flatten();
    Ok(Json(SaleView::new(
        sale,
        remaining,
        &state.sales.settings.currency,
    )))
}

/// The order id of a keyed request: the same (buyer, sale, key) always names the same
/// order, and the stock script takes at most one unit per order id.
fn keyed_order_id(user_id: &str, sale_id: &str, key: &str) -> String {
    let digest = Sha256::digest(format!("{user_id}\0{sale_id}\0{key}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes)
        .into_uuid()
        .to_string()
}

/// `POST /v1/flash-sales/{id}/orders`: take one unit and queue the order.
#[utoipa::path(post, path = "/v1/flash-sales/{id}/orders", tag = "flash sales", security(("api_key" = [])),
    params(("id" = String, Path, description = "Sale id"),
        ("Idempotency-Key" = Option<String>, Header, pattern = "^[\\x21-\\x7E]{1,128}$",
        description = "1 to 128 visible ASCII characters: a repeat names the same order and takes no second unit")),
    responses(
        (status = 202, description = "A unit is yours; the order is QUEUED (`Location` names it)", body = Accepted),
        (status = 400, description = "A malformed `Idempotency-Key` (named in `field`)", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
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
    state
        .core
        .limits
        .take(&super::limits::ORDERS, &user.id)
        .await?;
    let order_id = match &key {
        Some(k) => keyed_order_id(&user.id, &sale_id, k),
        None => uuid::Uuid::now_v7().to_string(),
    };
    let stock = &state.sales.stock;
    let now = Utc::now().timestamp_millis();
    let mut took = stock
        .take(&sale_id, &user.id, &order_id, now)
        .await
        .map_err(stock_down)?;
    if took == Take::NotLoaded {
        // A cold store (a restart of an embedded server, a lost Redis): load the sale
        // from the database, then try again.
        let Some(sale) = store::get_sale(&state.core.db, &sale_id).await? else {
            outcome("not_found");
            return Err(ApiError::NotFound("flash sale"));
        };
        state
            .sales
            .warm(&state.core.db, &sale)
            .await
            .map_err(stock_down)?;
        took = stock
            .take(&sale_id, &user.id, &order_id, now)
            .await
            .map_err(stock_down)?;
    }
    let refused = |code: &'static str, message: &str| {
        outcome(code);
        Err(ApiError::Refused {
            code,
            message: message.into(),
        })
    };
    match took {
        Take::Taken { .. } => {}
        Take::Duplicate => {
            // The same keyed request again: the same order, no second unit.
            outcome("replayed");
            let status = store::get_order(&state.core.db, &order_id)
                .await?
                .map_or(OrderStatus::Queued, |o| o.status);
            return Ok(accepted(order_id, status));
        }
        Take::SoldOut => return refused("sold_out", "sold out"),
        Take::LimitReached => {
            return refused(
                "limit_reached",
                "you hold as many units of this sale as it allows",
            );
        }
        Take::NotActive => return refused("not_active", "the sale has not started or has ended"),
        Take::NotLoaded => return Err(ApiError::NotFound("flash sale")),
    }
    let message = Envelope::new(
        CREATE_ORDER,
        serde_json::json!(CreateOrder {
            order_id: order_id.clone(),
            sale_id: sale_id.clone(),
            user_id: user.id.clone(),
        }),
    )
    .with_id(order_id.clone())
    .with_correlation_id(order_id.clone());
    let max_payload = state.core.broker.max_payload();
    let outgoing = Outgoing::new(Target::Queue(&ORDERS_CREATE), &message, max_payload)
        .map_err(|e| ApiError::Internal(e.into()))?;
    if let Err(why) = state.publisher.publish(outgoing).await {
        // Never a unit taken without an order on its way: give it back.
        let back = stock.give_back(&sale_id, &user.id, &order_id).await;
        tracing::warn!(order = %order_id, error = %why, returned = ?back.is_ok(), "order not published; unit given back");
        outcome("unavailable");
        return Err(ApiError::RetryLater {
            message: "orders cannot be queued right now".into(),
            retry_after_secs: 1,
        });
    }
    outcome("accepted");
    // No live event here: one broker message per order is the intake's whole cost. The
    // QUEUED event is stored with the order and goes out with UNPAID, in one message.
    Ok(accepted(order_id, OrderStatus::Queued))
}

fn outcome(outcome: &'static str) {
    metrics::counter!("conveyor_flash_sale_intake_total", "outcome" => outcome).increment(1);
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
        (status = 401, description = "Missing or invalid API key", body = ErrorBody)))]
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
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
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
        _ => Err(ApiError::NotFound("order")),
    }
}

#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MarkPaidRequest {
    /// The payment provider's reference (1 to 128 characters).
    #[schema(min_length = 1, max_length = 128)]
    pub payment_ref: String,
}

/// What a mark-paid did.
#[derive(Debug, Serialize, ToSchema)]
pub struct MarkPaidView {
    /// `paid`, `already_paid` or `paid_after_cancel` (recorded for refund).
    pub outcome: String,
    pub order: OrderView,
}

/// `POST /v1/admin/orders/{id}/mark-paid`: what the payment domain will call.
#[utoipa::path(post, path = "/v1/admin/orders/{id}/mark-paid", tag = "admin", security(("api_key" = [])),
    params(("id" = String, Path, description = "Order id")),
    request_body = MarkPaidRequest,
    responses(
        (status = 200, description = "UNPAID → PAID, or what happened instead", body = MarkPaidView),
        (status = 400, description = "No JSON body, or malformed JSON", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 404, description = "No such order", body = ErrorBody),
        (status = 422, description = "Invalid payment_ref", body = ErrorBody)))]
pub(crate) async fn mark_paid(
    State(state): State<FlashSales>,
    _: Admin,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<MarkPaidRequest>,
) -> Result<Json<MarkPaidView>, ApiError> {
    let reference = req.payment_ref.trim();
    if reference.is_empty() || reference.chars().count() > 128 {
        return Err(ApiError::invalid(
            "payment_ref",
            "must be 1 to 128 characters",
        ));
    }
    let paid = store::mark_paid(&state.core.db, &id, reference)
        .await?
        .ok_or(ApiError::NotFound("order"))?;
    let (outcome, order) = match paid {
        Paid::Now(o, ev) => {
            publish_events(state.core.broker.as_ref(), &[ev]).await;
            ("paid", o)
        }
        Paid::Already(o) => ("already_paid", o),
        Paid::AfterCancel(o) => {
            tracing::warn!(order = %o.id, "payment after the cancel: recorded for refund");
            ("paid_after_cancel", o)
        }
    };
    metrics::counter!("conveyor_flash_sale_payments_total", "outcome" => outcome).increment(1);
    Ok(Json(MarkPaidView {
        outcome: outcome.into(),
        order: OrderView::new(order, &state.sales.settings.currency),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ReconcileParams {
    /// Set the stock store's units left to stock − live orders (only on a quiet sale).
    #[param(value_type = bool)]
    pub repair: Option<bool>,
}

/// `POST /v1/admin/flash-sales/{id}/reconcile`: units left + live orders against stock.
#[utoipa::path(post, path = "/v1/admin/flash-sales/{id}/reconcile", tag = "admin", security(("api_key" = [])),
    params(("id" = String, Path, description = "Sale id"), ReconcileParams),
    responses(
        (status = 200, description = "The figures and the drift", body = Reconciled),
        (status = 400, description = "`repair` is not `true` or `false`", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 404, description = "No such sale", body = ErrorBody)))]
pub(crate) async fn reconcile(
    State(state): State<FlashSales>,
    _: Admin,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<ReconcileParams>,
) -> Result<Json<Reconciled>, ApiError> {
    let sale = store::get_sale(&state.core.db, &id)
        .await?
        .ok_or(ApiError::NotFound("flash sale"))?;
    let report = state
        .sales
        .reconcile(&state.core.db, &sale, p.repair.unwrap_or(false))
        .await
        .map_err(stock_down)?;
    Ok(Json(report))
}
