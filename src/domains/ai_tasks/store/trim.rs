//! Streamed text does not stay forever: `delta` and `reset` events older than the
//! retention go (the task's result and its material keep the whole text). Progress and
//! status events stay with their task.

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use sea_orm::{ColumnTrait as _, DatabaseConnection, DbErr, EntityTrait as _, QueryFilter as _};

use crate::domains::ai_tasks::entity::event;

pub fn text_events(
    db: &DatabaseConnection,
    cutoff: DateTime<Utc>,
) -> BoxFuture<'_, Result<u64, DbErr>> {
    Box::pin(async move {
        let gone = event::Entity::delete_many()
            .filter(event::Column::Kind.is_in(["delta", "reset"]))
            .filter(event::Column::CreatedAt.lt(cutoff))
            .exec(db)
            .await?;
        Ok(gone.rows_affected)
    })
}
