//! Payment-provider webhooks (issue 14): payment intents for configured products
//! (credit packs, memberships) and flash-sale orders; the webhooks of three signature
//! schemes (Stripe-style HMAC, Alipay RSA2, WeChat Pay v3), each verified on the raw body
//! and recorded in an inbox together with its `payments.apply` message in one transaction,
//! answered without waiting for the broker; the consumer that applies each event once
//! (credits, a membership that stacks, the order's UNPAID → PAID, refunds that never drive a
//! balance below zero silently and wait for their payment when they come first); the
//! broker-down fallback that applies events in-process; the inbox gauges.
//!
//! Files: [`routes`] (HTTP), [`verify`] (signatures), [`store`] (inbox, payments, apply),
//! [`recorder`] (webhooks' group commit), [`handler`] (the consumer), [`fallback`], [`gauges`], [`settings`] (`[payments]`),
//! [`sign`] (what `conveyor payments sign` builds).

pub mod entity;
pub mod expiry;
pub mod fallback;
pub mod gate;
pub mod gauges;
pub mod handler;
pub mod limits;
pub mod queues;
pub mod recorder;
pub mod routes;
pub mod settings;
pub mod sign;
pub mod store;
pub mod verify;

use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::BoxFuture;

use super::{Domain, Handlers, no_probes, no_streams};
use crate::api::Core;
use crate::consumer::{Handler, Worker};
use crate::platform::Platform;

pub const DOMAIN: Domain = Domain {
    name: "payments",
    group: "payments",
    queues: queues::QUEUES,
    delays: &[],
    handlers,
    jobs: fallback::start,
    routes,
    openapi: <routes::Doc as utoipa::OpenApi>::openapi,
    gauges: gauges::GAUGES,
    panels: &[],
    streams: no_streams,
    limits: limits::LIMITS,
    settings: Some(settings::SECTION),
    probes: no_probes,
};

fn handlers(platform: &Platform) -> BoxFuture<'_, anyhow::Result<Handlers>> {
    let apply: Arc<dyn Handler> = Arc::new(handler::ApplyHandler {
        platform: platform.clone(),
    });
    async move { Ok(vec![(&queues::PAYMENTS_APPLY, Worker::One(apply))]) }.boxed()
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
            recorder: recorder::start(platform),
            gate: gate::VerifyGate::per_core(),
            settings: Arc::new(settings),
        }))
    }
    .boxed()
}
