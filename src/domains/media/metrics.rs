//! The media gauge, sampled at each scrape: bytes held by every tenant. The counters
//! (`conveyor_storage_uploads_total{outcome}`, `_bytes_written_total`,
//! `_bytes_served_total`, `_removed_total{why}`, `_bytes_freed_total`) are counted
//! where they happen.

use futures::future::BoxFuture;
use sea_orm::DatabaseConnection;

use crate::storage::records;
use crate::telemetry::gauges::Gauge;

pub const GAUGES: &[Gauge] = &[Gauge {
    source: "storage",
    sample,
}];

fn sample(db: &DatabaseConnection) -> BoxFuture<'_, anyhow::Result<()>> {
    Box::pin(async move {
        let bytes = records::bytes_stored(db).await?;
        metrics::gauge!("conveyor_storage_bytes").set(bytes as f64);
        Ok(())
    })
}
