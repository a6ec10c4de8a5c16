//! Payment-provider webhooks (issue 14), in progress.
//!
//! Done: payment intents for configured credit packs (`POST /v1/payments`), the
//! Stripe-style HMAC webhook (verified on the raw body, amount and currency checked,
//! recorded in the inbox with its `payments.apply` message in one transaction, answered
//! without waiting for the broker; a redelivery changes nothing), the consumer that
//! applies each event once (inbox `RECEIVED → APPLIED` and payment `CREATED → PAID` with
//! the credit grant, one transaction), and the signature schemes of Alipay and WeChat Pay
//! v3 ([`verify`]). Next: their webhook routes, memberships, flash-sale orders, refunds,
//! the broker-down fallback, the signing CLI.

pub mod entity;
pub mod handler;
pub mod queues;
pub mod routes;
pub mod settings;
pub mod store;
pub mod verify;

use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::BoxFuture;

use super::{Domain, Handlers, no_jobs, no_streams};
use crate::api::Core;
use crate::consumer::Handler;
use crate::platform::Platform;

pub const DOMAIN: Domain = Domain {
    name: "payments",
    group: "payments",
    queues: queues::QUEUES,
    delays: &[],
    handlers,
    jobs: no_jobs,
    routes,
    openapi: <routes::Doc as utoipa::OpenApi>::openapi,
    gauges: &[],
    streams: no_streams,
    settings: Some(settings::SECTION),
};

fn handlers(_: &Platform) -> BoxFuture<'_, anyhow::Result<Handlers>> {
    let apply: Arc<dyn Handler> = Arc::new(handler::ApplyHandler);
    async move { Ok(vec![(&queues::PAYMENTS_APPLY, apply)]) }.boxed()
}

fn routes<'a>(
    platform: &'a Platform,
    core: &'a Core,
) -> BoxFuture<'a, anyhow::Result<axum::Router>> {
    async move {
        let settings = settings::PaymentSettings::from_settings(&platform.settings)?;
        Ok(routes::routes(routes::Payments {
            core: core.clone(),
            keys: Arc::new(settings.keys()?),
            settings: Arc::new(settings),
        }))
    }
    .boxed()
}
