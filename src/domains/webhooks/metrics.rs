//! The webhooks' gauges, sampled at each scrape of `/metrics`: deliveries still being
//! attempted, the oldest one's age, how long the most overdue one has been due (its next
//! attempt's time passed and nobody sent it: the consumers are not sending, whatever the
//! endpoints do; a failing endpoint's deliveries wait for a future attempt), and the
//! endpoints failing now. The attempt counters are
//! exported from the first scrape, so the failure-ratio alert has a series to read.

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use sea_orm::{
    ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait as _, QueryFilter, QuerySelect,
};

use super::entity::{DeliveryStatus, delivery, endpoint};
use crate::telemetry::gauges::{Gauge, age_secs};

pub const GAUGES: &[Gauge] = &[Gauge {
    source: "webhooks",
    sample,
}];

fn sample(db: &DatabaseConnection) -> BoxFuture<'_, anyhow::Result<()>> {
    Box::pin(async move {
        let pending = delivery::Entity::find()
            .filter(delivery::Column::Status.eq(DeliveryStatus::Pending))
            .count(db)
            .await?;
        // The oldest pending delivery and the one due first, in one read.
        let (oldest, due): (Option<DateTime<Utc>>, Option<DateTime<Utc>>) =
            delivery::Entity::find()
                .select_only()
                .column_as(delivery::Column::CreatedAt.min(), "oldest")
                .column_as(delivery::Column::NextAttemptAt.min(), "due")
                .filter(delivery::Column::Status.eq(DeliveryStatus::Pending))
                .into_tuple()
                .one(db)
                .await?
                .unwrap_or_default();
        let failing = endpoint::Entity::find()
            .filter(endpoint::Column::Enabled.eq(true))
            .filter(endpoint::Column::FailingSince.is_not_null())
            .count(db)
            .await?;
        metrics::gauge!("conveyor_webhook_deliveries_pending").set(pending as f64);
        metrics::gauge!("conveyor_webhook_deliveries_oldest_seconds")
            .set(oldest.map_or(0.0, age_secs));
        metrics::gauge!("conveyor_webhook_deliveries_due_seconds")
            .set(due.filter(|d| *d < Utc::now()).map_or(0.0, age_secs));
        metrics::gauge!("conveyor_webhook_endpoints_failing").set(failing as f64);
        for result in ["delivered", "failed"] {
            metrics::counter!("conveyor_webhook_attempts_total", "result" => result).increment(0);
        }
        Ok(())
    })
}
