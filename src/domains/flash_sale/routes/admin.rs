//! Admin: mark an order paid by hand, reconcile a sale's stock.

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{FlashSales, stock_down};
use crate::api::openapi::ErrorBody;
use crate::api::{Admin, ApiJson, ApiQuery};
use crate::domains::flash_sale::messages::publish_events;
use crate::domains::flash_sale::service::Reconciled;
use crate::domains::flash_sale::store::{self, Paid};
use crate::domains::flash_sale::view::OrderView;
use crate::error::ApiError;

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
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
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
    let paid = store::mark_paid(&state.core.db, &state.notices, &id, reference)
        .await?
        .ok_or(ApiError::not_found("order"))?;
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
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such sale", body = ErrorBody)))]
pub(crate) async fn reconcile(
    State(state): State<FlashSales>,
    _: Admin,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<ReconcileParams>,
) -> Result<Json<Reconciled>, ApiError> {
    let sale = store::get_sale(&state.core.db, &id)
        .await?
        .ok_or(ApiError::not_found("flash sale"))?;
    let report = state
        .sales
        .reconcile(&state.core.db, &sale, p.repair.unwrap_or(false))
        .await
        .map_err(stock_down)?;
    Ok(Json(report))
}
