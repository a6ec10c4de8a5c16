//! Outgoing webhooks (issue 37): a tenant's own servers hear of final states without a
//! browser watching. A domain records its events through the event seam
//! (`crate::events`) inside the change's transaction; webhooks' [`listener`] hears them
//! there, and the endpoints of the tenant that want each get a delivery, and a
//! `webhooks.deliver` message through the outbox. The types an endpoint may subscribe to
//! are the public ones the domains declare (`Domain::events`), read from the seam. The `webhooks`
//! consumer group POSTs each delivery, signed as Standard Webhooks define it (the
//! event's id as `webhook-id` on every attempt), and retries a non-2xx answer or a
//! timeout on the delay queues `webhooks.retry.1..5` (5 s, 30 s, 2 min, 10 min, 1 h, then
//! hourly for 3 days). Each endpoint has a few slots per process, so a slow server never
//! holds the others' deliveries; URLs are checked against SSRF when saved and when
//! connected ([`target`]). Every attempt is in the delivery log.
//!
//! Files: [`routes`] (endpoints and the delivery log over HTTP), [`store`], [`listener`]
//! (what an event becomes: deliveries), [`handler`] (one attempt), [`sender`] (the signed
//! request), [`target`] (where a webhook may go), [`secrets`], [`messages`], [`queues`],
//! [`view`], [`entity`], [`settings`] (`[webhooks]`), [`ops`] (the /ops panel and the
//! log's retention), [`metrics`] (the gauges).

pub mod entity;
pub mod handler;
pub mod limits;
pub mod listener;
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
    .events(&[&listener::ENDPOINT_DISABLED])
    .openapi(<routes::Doc as utoipa::OpenApi>::openapi);

fn install(platform: &Platform) -> BoxFuture<'_, anyhow::Result<Installed>> {
    async move {
        let settings = Arc::new(WebhookSettings::from_settings(&platform.settings)?);
        let give_up = settings.give_up();
        let sender = sender::Sender::new(
            Duration::from_millis(settings.timeout_ms),
            settings.allow_private_targets,
        )?;
        let deliver = Arc::new(handler::DeliveryHandler::new(
            sender,
            (*settings).clone(),
            platform.relay.clone(),
            platform.events.clone(),
        ));
        let events = platform.events.clone();
        Ok(Installed::default()
            .handler(&queues::WEBHOOKS_DELIVER, Worker::One(deliver))
            .listener(listener::Deliveries { give_up })
            .routes(move |core| {
                // Built once every domain is installed: the seam knows every type now.
                let event_types = events
                    .declared()
                    .into_iter()
                    .filter(|t| t.public)
                    .map(|t| t.name)
                    .collect();
                let state = routes::Webhooks {
                    core,
                    settings,
                    event_types,
                };
                async move { Ok(routes::routes(state)) }.boxed()
            }))
    }
    .boxed()
}
