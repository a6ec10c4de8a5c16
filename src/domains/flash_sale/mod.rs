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

pub mod cli;
pub mod entity;
pub mod handler;
pub mod intake;
pub mod jobs;
pub mod limits;
pub mod messages;
pub mod notify;
pub mod publisher;
pub mod queues;
pub mod routes;
pub mod service;
pub mod settings;
pub mod status;
pub mod stock;
pub mod store;
pub mod stream;
pub mod view;
pub mod write;

use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::BoxFuture;

pub use status::OrderStatus;

use super::{Domain, Installed};
use crate::consumer::Worker;
use crate::platform::Platform;
use service::Sales;

/// The flash-sale flow in the domain registry.
pub const DOMAIN: Domain = Domain::new("flash_sale", "orders", queues::QUEUES, install)
    .delays(queues::DELAYS)
    .settings(settings::SECTION)
    .limits(limits::LIMITS)
    .events(notify::EVENTS)
    .gauges(jobs::GAUGES)
    .openapi(<routes::Doc as utoipa::OpenApi>::openapi)
    .cli(cli::CLI);

/// One `Sales` per process: the embedded stock must be the same map for the API and
/// the in-process consumers.
fn install(platform: &Platform) -> BoxFuture<'_, anyhow::Result<Installed>> {
    async move {
        let sales = Arc::new(Sales::connect(&platform.settings, platform.broker.topology()).await?);
        let create = Arc::new(handler::CreateOrderHandler {
            sales: sales.clone(),
            relay: platform.relay.clone(),
            max_payload: platform.settings.broker.max_payload_bytes,
        });
        let notices = notify::Notices::new(platform.events.clone(), &sales.settings.currency);
        let expire = Arc::new(handler::ExpireOrderHandler {
            sales: sales.clone(),
            notices: notices.clone(),
        });
        let (db, broker) = (platform.db.clone(), platform.broker.clone());
        let (for_jobs, for_routes) = (sales.clone(), sales.clone());
        let currency = sales.settings.currency.clone();
        let for_jobs_notices = notices.clone();
        Ok(Installed::default()
            .handler(&queues::ORDERS_CREATE, Worker::Batch(create))
            .handler(&queues::ORDERS_EXPIRE, Worker::One(expire))
            .job(move |token| jobs::run(db, broker, for_jobs, for_jobs_notices, token).boxed())
            .stream(Arc::new(stream::OrderStream { currency }))
            .routes(move |core| {
                let settings = &for_routes.settings;
                let timeout = std::time::Duration::from_millis(settings.publish_timeout_ms);
                let publisher = publisher::Publisher::start(
                    core.broker.clone(),
                    timeout,
                    settings.orders_per_message,
                );
                let state = routes::FlashSales {
                    publisher,
                    core,
                    sales: for_routes,
                    notices,
                };
                async move { Ok(routes::routes(state)) }.boxed()
            }))
    }
    .boxed()
}
