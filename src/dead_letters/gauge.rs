//! `conveyor_dead_letters_waiting`: dead letters no operator has acted on yet, sampled
//! at each scrape of `/metrics`.

use futures::future::BoxFuture;
use sea_orm::DatabaseConnection;

use crate::telemetry::gauges::Gauge;

pub const GAUGE: Gauge = Gauge {
    source: "dead_letters",
    sample: waiting_boxed,
};

fn waiting_boxed(db: &DatabaseConnection) -> BoxFuture<'_, anyhow::Result<()>> {
    Box::pin(waiting(db))
}

async fn waiting(db: &DatabaseConnection) -> anyhow::Result<()> {
    let waiting: u64 = super::waiting(db).await?.iter().map(|w| w.count).sum();
    metrics::gauge!("conveyor_dead_letters_waiting").set(waiting as f64);
    Ok(())
}
