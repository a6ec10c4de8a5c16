//! The inbox's backlog, sampled at each scrape of `/metrics`: events recorded but not
//! applied (received, or refunds waiting for their payment) and the oldest one's age. A
//! growing age means grants are not happening — the alert to page on.

use futures::future::BoxFuture;
use sea_orm::DatabaseConnection;

use super::store;
use crate::telemetry::gauges::{Gauge, age_secs};

pub const GAUGES: &[Gauge] = &[Gauge {
    source: "payments_inbox",
    sample: inbox,
}];

fn inbox(db: &DatabaseConnection) -> BoxFuture<'_, anyhow::Result<()>> {
    Box::pin(async move {
        let (pending, oldest) = store::backlog(db).await?;
        let age = oldest.map_or(0.0, age_secs);
        metrics::gauge!("conveyor_payments_inbox_pending").set(pending as f64);
        metrics::gauge!("conveyor_payments_inbox_oldest_seconds").set(age);
        // Exported from the first scrape, so an alert on its increase sees the first one.
        metrics::counter!("conveyor_payments_refund_shortfall_credits_total").increment(0);
        Ok(())
    })
}
