//! Housekeeping: tables that only grow are trimmed once an hour. Idempotency keys are
//! kept 48 hours (clients are promised at least 24); published outbox rows 7 days (for
//! audits of what went out). Several processes may run it: deletes are idempotent.

use std::time::Duration;

use chrono::Utc;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use tokio_util::sync::CancellationToken;

use crate::api::idempotency;
use crate::outbox::entity as outbox;

const EVERY: Duration = Duration::from_secs(3600);

pub async fn run(db: DatabaseConnection, shutdown: CancellationToken) -> anyhow::Result<()> {
    loop {
        if let Err(e) = once(&db).await {
            tracing::warn!(error = %e, "housekeeping round failed");
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(EVERY) => {}
        }
    }
}

/// One round; returns (idempotency keys, outbox rows) deleted.
pub async fn once(db: &DatabaseConnection) -> Result<(u64, u64), sea_orm::DbErr> {
    let keys = idempotency::purge_older_than(db, Utc::now() - chrono::Duration::hours(48)).await?;
    let rows = outbox::Entity::delete_many()
        .filter(outbox::Column::PublishedAt.lt(Utc::now() - chrono::Duration::days(7)))
        .exec(db)
        .await?
        .rows_affected;
    if keys + rows > 0 {
        tracing::info!(
            idempotency_keys = keys,
            outbox_rows = rows,
            "housekeeping trimmed old rows"
        );
    }
    Ok((keys, rows))
}
