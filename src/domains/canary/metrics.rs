//! The canary's gauges, sampled at each scrape of `/metrics`: the newest round trip's
//! latency and age (an age that keeps growing means messages are not getting through:
//! the alert to page on), and the pings overdue.

use futures::future::BoxFuture;
use sea_orm::DatabaseConnection;

use super::store;
use crate::telemetry::gauges::{Gauge, age_secs};

/// A ping not back this long after it was sent counts as overdue.
pub const OVERDUE: chrono::Duration = chrono::Duration::seconds(30);

pub const GAUGES: &[Gauge] = &[Gauge {
    source: "canary",
    sample,
}];

fn sample(db: &DatabaseConnection) -> BoxFuture<'_, anyhow::Result<()>> {
    Box::pin(async move {
        let (last, overdue) = store::health(db, chrono::Utc::now() - OVERDUE).await?;
        // Exported from the first scrape (an alert rule must see the series): with no
        // round trip yet, the age is how long the oldest ping has waited (0 with none).
        let (latency, since) = match last {
            Some(last) => (
                last.latency_ms.unwrap_or(0) as f64 / 1000.0,
                last.received_at,
            ),
            None => (0.0, store::oldest_waiting(db).await?),
        };
        metrics::gauge!("conveyor_canary_latency_seconds").set(latency);
        metrics::gauge!("conveyor_canary_last_success_age_seconds")
            .set(since.map_or(0.0, age_secs));
        metrics::gauge!("conveyor_canary_overdue").set(overdue as f64);
        Ok(())
    })
}
