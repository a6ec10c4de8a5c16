//! Outgoing webhooks (issue 37): a tenant's own servers hear of final states without a
//! browser watching. A domain reports a state change with [`emit::record_many`] inside
//! the change's transaction; the endpoints of the tenant that want it each get a
//! delivery, and a `webhooks.deliver` message through the outbox. The `webhooks`
//! consumer group POSTs each delivery, signed as Standard Webhooks define it (the
//! event's id as `webhook-id` on every attempt), and retries a non-2xx answer or a
//! timeout on the delay queues `webhooks.retry.1..5` (5 s, 30 s, 2 min, 10 min, 1 h, then
//! hourly for 3 days). Each endpoint has a few slots per process, so a slow server never
//! holds the others' deliveries; URLs are checked against SSRF when saved and when
//! connected ([`target`]). Every attempt is in the delivery log.
//!
//! Files: [`routes`] (endpoints and the delivery log over HTTP), [`store`], [`emit`]
//! (the entry point of other domains), [`handler`] (one attempt), [`sender`] (the signed
//! request), [`target`] (where a webhook may go), [`secrets`], [`messages`], [`queues`],
//! [`view`], [`entity`], [`settings`] (`[webhooks]`), [`ops`] (the /ops panel and the
//! log's retention), [`metrics`] (the gauges).

pub mod emit;
pub mod entity;
pub mod handler;
pub mod limits;
pub mod messages;
pub mod metrics;
pub mod ops;
pub mod queues;
pub mod routes;
pub mod secrets;
pub mod sender;
pub mod settings;
pub mod store;
pub mod target;
pub mod view;

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::BoxFuture;

use super::{Domain, Installed};
use crate::consumer::Worker;
use crate::platform::Platform;
use settings::WebhookSettings;

pub const DOMAIN: Domain = Domain::new("webhooks", "webhooks", queues::QUEUES, install)
    .delays(queues::RETRY_DELAYS)
    .settings(settings::SECTION)
    .gauges(metrics::GAUGES)
    .panels(ops::PANELS)
    .retention(ops::RETENTION)
    .limits(limits::LIMITS)
    .openapi(<routes::Doc as utoipa::OpenApi>::openapi);

fn install(platform: &Platform) -> BoxFuture<'_, anyhow::Result<Installed>> {
    async move {
        let settings = Arc::new(WebhookSettings::from_settings(&platform.settings)?);
        emit::set_give_up_secs(settings.give_up_after_secs);
        let sender = sender::Sender::new(
            Duration::from_millis(settings.timeout_ms),
            settings.allow_private_targets,
        )?;
        let deliver = Arc::new(handler::DeliveryHandler::new(
            sender,
            (*settings).clone(),
            platform.relay.clone(),
        ));
        Ok(Installed::default()
            .handler(&queues::WEBHOOKS_DELIVER, Worker::One(deliver))
            .routes(move |core| {
                async move { Ok(routes::routes(routes::Webhooks { core, settings })) }.boxed()
            }))
    }
    .boxed()
}
