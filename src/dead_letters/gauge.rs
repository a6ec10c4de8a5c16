//! `conveyor_dead_letters_waiting`: dead letters no operator has acted on yet, sampled
//! at each scrape of `/metrics`.

use futures::future::BoxFuture;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter};

use super::{Status, entity};
use crate::telemetry::gauges::Gauge;

pub const GAUGE: Gauge = Gauge {
    source: "dead_letters",
    sample: waiting_boxed,
};

fn waiting_boxed(db: &DatabaseConnection) -> BoxFuture<'_, anyhow::Result<()>> {
    Box::pin(waiting(db))
}

async fn waiting(db: &DatabaseConnection) -> anyhow::Result<()> {
    let waiting = entity::Entity::find()
        .filter(entity::Column::Status.is_in(Status::WAITING.map(Status::as_str)))
        .count(db)
        .await?;
    metrics::gauge!("conveyor_dead_letters_waiting").set(waiting as f64);
    Ok(())
}
