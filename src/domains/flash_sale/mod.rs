//! Flash-sale orders, end to end.
//!
//! Admins create a sale (item, price in the minor unit of its currency, stock, per-user limit, window); it is
//! loaded into the stock store (Redis, or in process when embedded). `POST
//! /v1/flash-sales/{id}/orders` runs one Lua script that checks the window, the stock and
//! the buyer's limit before it takes a unit, publishes the order message with a confirm
//! and answers 202 QUEUED; a failed publish gives the unit back (503). The `orders`
//! consumer writes the order (UNPAID) holding the unit in the sale's `sold` (never above
//! stock: the database backstop) and, through the outbox in the same transaction,
//! schedules the payment timer on the `orders.payment-timeout` delay queue. When it fires
//! an order still UNPAID becomes CANCELED and its unit goes back, once; a PAID order is
//! left alone; a payment after the cancel is recorded for refund. A sweep re-drives lost
//! timers; reconciliation checks stock = units left + live orders. Buyers follow their
//! orders on the `order` live stream.

pub mod entity;
pub mod handler;
pub mod jobs;
pub mod limits;
pub mod messages;
pub mod publisher;
pub mod queues;
pub mod routes;
pub mod service;
pub mod settings;
pub mod status;
pub mod stock;
pub mod store;
pub mod stream;

use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::BoxFuture;

pub use status::OrderStatus;

use super::{Domain, Handlers, no_probes};
use crate::api::Core;
use crate::consumer::{Handler, Worker};
use crate::live::Source;
use crate::platform::Platform;
use service::Sales;

/// The flash-sale flow in the domain registry.
pub const DOMAIN: Domain = Domain {
    name: "flash_sale",
    group: "orders",
    queues: queues::QUEUES,
    delays: queues::DELAYS,
    handlers,
    jobs: jobs::start,
    routes,
    openapi: <routes::Doc as utoipa::OpenApi>::openapi,
    gauges: jobs::GAUGES,
    panels: &[],
    streams,
    limits: limits::LIMITS,
    settings: Some(settings::SECTION),
    probes: no_probes,
};

fn handlers(platform: &Platform) -> BoxFuture<'_, anyhow::Result<Handlers>> {
    async move {
        let sales = Sales::of(platform).await?;
        let create: Arc<dyn Handler> = Arc::new(handler::CreateOrderHandler {
            sales: sales.clone(),
            relay: platform.relay.clone(),
            max_payload: platform.settings.broker.max_payload_bytes,
        });
        let expire: Arc<dyn Handler> = Arc::new(handler::ExpireOrderHandler { sales });
        Ok(vec![
            (&queues::ORDERS_CREATE, Worker::One(create)),
            (&queues::ORDERS_EXPIRE, Worker::One(expire)),
        ])
    }
    .boxed()
}

fn routes<'a>(
    platform: &'a Platform,
    core: &'a Core,
) -> BoxFuture<'a, anyhow::Result<axum::Router>> {
    async move {
        let sales = Sales::of(platform).await?;
        let timeout = std::time::Duration::from_millis(sales.settings.publish_timeout_ms);
        Ok(routes::routes(routes::FlashSales {
            core: core.clone(),
            publisher: publisher::Publisher::start(platform.broker.clone(), timeout),
            sales,
        }))
    }
    .boxed()
}

fn streams(platform: &Platform) -> Vec<Arc<dyn Source>> {
    // A bad section stopped the start-up long before; the default only satisfies types.
    let currency = settings::FlashSaleSettings::from_settings(&platform.settings)
        .map(|s| s.currency)
        .unwrap_or_default();
    vec![Arc::new(stream::OrderStream { currency })]
}
