//! HTTP: sales (admins create and list them; anyone signed in reads one), order intake,
//! the buyer's orders, and the admin's mark-paid and reconcile.
//!
//! Intake does no database work ([`super::intake`]): one Lua script takes the unit (or says why not), the
//! order message is published with a confirm, and the answer is 202 QUEUED. If the
//! publish fails the unit goes back and the buyer gets 503 with `Retry-After`.

mod admin;
mod orders;
mod sales;

use std::sync::Arc;

use axum::Router;
use axum::extract::FromRef;
use axum::routing::{get, post};

use crate::api::Core;
use crate::domains::flash_sale::notify::Notices;
use crate::domains::flash_sale::publisher::Publisher;
use crate::domains::flash_sale::service::Sales;
use crate::error::ApiError;

/// The flash-sale routes' state.
#[derive(Clone, FromRef)]
pub struct FlashSales {
    pub core: Core,
    pub sales: Arc<Sales>,
    pub publisher: Publisher,
    /// Where an order marked paid by hand records its event.
    pub notices: Notices,
}

pub fn routes(state: FlashSales) -> Router {
    Router::new()
        .route(
            "/v1/admin/flash-sales",
            post(sales::create).get(sales::list),
        )
        .route(
            "/v1/admin/flash-sales/{id}/reconcile",
            post(admin::reconcile),
        )
        .route("/v1/flash-sales/{id}", get(sales::show))
        .route("/v1/flash-sales/{id}/orders", post(orders::order))
        .route("/v1/orders", get(orders::list_orders))
        .route("/v1/orders/{id}", get(orders::read_order))
        .route("/v1/admin/orders/{id}/mark-paid", post(admin::mark_paid))
        .with_state(state)
}

/// The routes' OpenAPI entries.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(
        sales::create,
        sales::list,
        sales::show,
        orders::order,
        orders::list_orders,
        orders::read_order,
        admin::mark_paid,
        admin::reconcile
    ),
    tags((name = "flash sales", description = "Flash-sale orders: Redis stock, orders written by consumers, 30-minute unpaid cancel"))
)]
pub struct Doc;

pub(super) fn stock_down(e: impl std::fmt::Display) -> ApiError {
    tracing::warn!(error = %e, "flash-sale stock store unavailable");
    ApiError::retry_later("the stock store is unavailable".into(), 1)
}
