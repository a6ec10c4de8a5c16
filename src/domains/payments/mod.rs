//! Payment-provider webhooks (issue 14): payment intents for configured products
//! (credit packs, memberships) and flash-sale orders; the webhooks of three signature
//! schemes (Stripe-style HMAC, Alipay RSA2, WeChat Pay v3), each verified on the raw body
//! and recorded in an inbox together with its `payments.apply` message in one transaction,
//! answered without waiting for the broker; the consumer that applies each event once
//! (credits, a membership that stacks, the order's UNPAID → PAID, refunds that never drive a
//! balance below zero silently and wait for their payment when they come first); the
//! broker-down fallback that applies events in-process; expiry of unpaid intents; the
//! inbox gauges.
//!
//! The domain skeleton: [`queues`], [`messages`], [`settings`], [`limits`], [`entity`],
//! [`store`] (intents, inbox, apply), [`service`] (the per-process service and its
//! operations; [`accept`] for verified webhooks), [`routes`] (thin HTTP), [`handler`]
//! (the consumer), [`jobs`], [`view`], [`metrics`], [`cli`]; and what only payments
//! have: [`verify`] (signatures), [`gate`] (bounded checks), [`recorder`] (the webhooks'
//! group commit), [`sign`] (test signing for `conveyor payments sign`).

pub mod accept;
pub mod cli;
pub mod entity;
pub mod gate;
pub mod handler;
pub mod jobs;
pub mod limits;
pub mod messages;
pub mod metrics;
pub mod notify;
pub mod queues;
pub mod recorder;
pub mod routes;
pub mod service;
pub mod settings;
pub mod sign;
pub mod store;
pub mod verify;
pub mod view;

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::BoxFuture;

use super::{Domain, Installed};
use crate::consumer::Worker;
use crate::platform::Platform;
use service::Payments;

pub const DOMAIN: Domain = Domain::new("payments", "payments", queues::QUEUES, install)
    .settings(settings::SECTION)
    .limits(limits::LIMITS)
    .events(notify::EVENTS)
    .gauges(metrics::GAUGES)
    .openapi(<routes::Doc as utoipa::OpenApi>::openapi)
    .configured_openapi(routes::intents::documented)
    .cli(cli::CLI);

fn install(platform: &Platform) -> BoxFuture<'_, anyhow::Result<Installed>> {
    async move {
        let payments = Arc::new(Payments::new(platform)?);
        let db = &platform.settings.database;
        let (writers, linger) = (
            db.group_commit_writers,
            Duration::from_millis(db.group_commit_linger_ms),
        );
        let apply = Arc::new(handler::ApplyHandler {
            payments: payments.clone(),
        });
        let (fallback, expiry, routes) = (payments.clone(), payments.clone(), payments.clone());
        Ok(Installed::default()
            .handler(&queues::PAYMENTS_APPLY, Worker::Batch(apply))
            .job(move |token| jobs::fallback::run(fallback, token).boxed())
            .job(move |token| jobs::expiry::run(expiry, token).boxed())
            .routes(move |core| {
                let recorder = recorder::start(&routes, writers, linger);
                let state = routes::PaymentsState {
                    core,
                    recorder,
                    service: routes,
                };
                async move { Ok(routes::routes(state)) }.boxed()
            }))
    }
    .boxed()
}
