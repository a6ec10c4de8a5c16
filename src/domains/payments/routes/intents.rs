//! `POST /v1/payments` and `GET /v1/payments/{id}`: a buyer's payment intents.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::PaymentsState;
use crate::api::openapi::ErrorBody;
use crate::api::{ApiJson, AuthUser};
use crate::domains::payments::limits;
use crate::domains::payments::service::{IntentError, Want};
use crate::domains::payments::store;
use crate::domains::payments::view::PaymentView;
use crate::error::ApiError;

/// What to pay for: a product of `[payments.products]`, or one of the caller's unpaid
/// flash-sale orders (exactly one of the two).
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PaymentRequest {
    pub product: Option<String>,
    /// A flash-sale order id; the payment is for its price.
    pub order: Option<String>,
}

/// The document's `PaymentRequest` as the server reads it: exactly one of `product` (one
/// of the configured `[payments.products]`, named at start-up) and `order` (the other
/// absent or null), so a generated client never sends what the server refuses.
pub fn documented(build: &crate::contract::DocContext<'_>, doc: &mut utoipa::openapi::OpenApi) {
    use serde_json::json;
    let settings = build.settings;
    let products: Vec<String> = super::super::settings::PaymentSettings::from_settings(settings)
        .map(|s| s.products.keys().cloned().collect())
        .unwrap_or_default();
    let mut variants = Vec::new();
    if !products.is_empty() {
        variants.push(json!({
            "type": "object",
            "title": "For a product",
            "properties": {
                "product": {"type": "string", "enum": products, "description": "A product of `[payments.products]`"},
                "order": {"type": "null"},
            },
            "required": ["product"],
            "additionalProperties": false,
        }));
    }
    variants.push(json!({
        "type": "object",
        "title": "For a flash-sale order",
        "properties": {
            "order": {"type": "string", "minLength": 1, "maxLength": 64, "description": "One of the caller's unpaid flash-sale orders; the payment is for its price"},
            "product": {"type": "null"},
        },
        "required": ["order"],
        "additionalProperties": false,
    }));
    let schema = json!({
        "description": "What to pay for: exactly one of a configured product and an unpaid flash-sale order",
        "oneOf": variants,
    });
    crate::api::openapi::set_schema(doc, "PaymentRequest", schema);
}

impl From<IntentError> for ApiError {
    fn from(e: IntentError) -> Self {
        match e {
            IntentError::UnknownProduct { .. } => ApiError::invalid("product", e.to_string()),
            IntentError::NoSuchOrder => ApiError::not_found("order"),
            IntentError::OrderNotPayable(_) => {
                ApiError::refused("order_not_payable", e.to_string())
            }
            IntentError::TooManyOpen(_) => {
                crate::limits::cap_refusal(&limits::OPEN, "too_many_open_payments", e.to_string())
            }
            IntentError::Db(e) => e.into(),
        }
    }
}

/// `POST /v1/payments`: a payment intent for a product or a flash-sale order.
#[utoipa::path(post, path = "/v1/payments", operation_id = "create_payment", tag = "payments", security(("api_key" = [])),
    request_body = PaymentRequest,
    responses(
        (status = 201, description = "The intent", body = PaymentView),
        (status = 400, description = "Neither or both of product and order", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such order of the caller's", body = ErrorBody),
        (status = 409, description = "`order_not_payable`: the order is not UNPAID", body = ErrorBody),
        (status = 422, description = "Unknown product", body = ErrorBody),
        (status = 429, description = "`rate_limited` (intents per minute) or `too_many_open_payments` (`Retry-After`)", body = ErrorBody)))]
pub(crate) async fn create(
    State(state): State<PaymentsState>,
    AuthUser(user): AuthUser,
    ApiJson(req): ApiJson<PaymentRequest>,
) -> Result<(StatusCode, Json<PaymentView>), ApiError> {
    let want = match (req.product, req.order) {
        (Some(product), None) => Want::Product(product),
        (None, Some(order)) => Want::Order(order),
        _ => {
            return Err(ApiError::bad_request(
                "product",
                "give exactly one of `product` and `order`",
            ));
        }
    };
    let limits = &state.core.limits;
    limits.take(&limits::INTENTS, &user.id).await?;
    let open_cap = limits.value(&limits::OPEN, &user.id).await;
    let p = state
        .service
        .create_intent(&user.id, want, open_cap)
        .await?;
    Ok((StatusCode::CREATED, Json(PaymentView::new(p, Vec::new()))))
}

/// `GET /v1/payments/{id}`: the caller's payment and its events.
#[utoipa::path(get, path = "/v1/payments/{id}", operation_id = "show_payment", tag = "payments", security(("api_key" = [])),
    params(("id" = String, Path, description = "Payment id")),
    responses(
        (status = 200, description = "The payment and its events", body = PaymentView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such payment of the caller's", body = ErrorBody)))]
pub(crate) async fn show(
    State(state): State<PaymentsState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<PaymentView>, ApiError> {
    let db = &state.service.db;
    match store::get(db, &id).await? {
        Some(p) if user.can_see(&p.user_id) => {
            let events = store::events_of(db, &p.id).await?;
            Ok(Json(PaymentView::new(p, events)))
        }
        _ => Err(ApiError::not_found("payment")),
    }
}
