//! The canary: a synthetic end-to-end check. A job of the `canary` group sends a ping
//! every `canary.interval_ms` through the outbox ([`job`]); the `canary.ping` consumer
//! stamps its row when it arrives ([`handler`]); `/metrics` shows the newest round
//! trip's latency and age and the pings overdue ([`metrics`]); admins read the same at
//! `GET /v1/admin/canary` ([`routes`]). A round trip crosses what every real message
//! crosses (a transaction, the relay, the broker, a consumer, the database), so a stale
//! canary says the platform has stopped moving work before a customer does.
//!
//! Files: [`queues`], [`settings`] (`[canary]`), [`entity`] and [`store`] (the
//! `canary_pings` table), [`messages`], [`job`], [`handler`], [`metrics`], [`routes`],
//! [`events`] (`canary.ping`: the event seam's proof that a new type edits only its
//! owner).

pub mod entity;
pub mod events;
pub mod handler;
pub mod job;
pub mod messages;
pub mod metrics;
pub mod queues;
pub mod routes;
pub mod settings;
pub mod store;

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::BoxFuture;

use super::{Domain, Installed};
use crate::consumer::Worker;
use crate::housekeeping::Retention;
use crate::platform::Platform;
use settings::CanarySettings;

pub const DOMAIN: Domain = Domain::new("canary", "canary", queues::QUEUES, install)
    .settings(settings::SECTION)
    .gauges(metrics::GAUGES)
    .events(events::EVENTS)
    .retention(RETENTION)
    .openapi(<routes::Doc as utoipa::OpenApi>::openapi);

/// A week of pings is enough to compare today with last week.
const RETENTION: &[Retention] = &[Retention {
    table: "canary_pings",
    keep: Duration::from_secs(7 * 24 * 3600),
    trim: store::trim,
}];

fn install(platform: &Platform) -> BoxFuture<'_, anyhow::Result<Installed>> {
    async move {
        let settings = CanarySettings::from_settings(&platform.settings)?;
        let (db, relay) = (platform.db.clone(), platform.relay.clone());
        let interval = Duration::from_millis(settings.interval_ms);
        let max_payload = platform.settings.broker.max_payload_bytes;
        Ok(Installed::default()
            .handler(
                &queues::CANARY_PING,
                Worker::One(Arc::new(handler::PingHandler)),
            )
            .job(move |token| job::run(db, relay, interval, max_payload, token).boxed())
            .routes(move |core| {
                async move {
                    Ok(routes::routes(routes::Canary {
                        core,
                        interval_ms: settings.interval_ms,
                    }))
                }
                .boxed()
            }))
    }
    .boxed()
}
