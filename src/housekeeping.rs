//! Housekeeping: tables that grow with traffic are trimmed once an hour, each kept as
//! long as the guarantee it backs needs: idempotency keys 48 hours (clients are promised
//! at least 24); published outbox rows 7 days (audits of what went out); the processed-
//! message fence `consumer.fence_retention_days` (7: longer than any redelivery or replay
//! window, see config/base.toml), and the crash-loop counters as long; WebSocket tickets
//! an hour after they expired (they live 60 s and are single-use). Several processes may run it: deletes are idempotent.

use std::time::Duration;

use chrono::Utc;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use tokio_util::sync::CancellationToken;

use crate::api::idempotency;
use crate::consumer::deaths::entity as deaths;
use crate::consumer::fence_entity as fence;
use crate::live::tickets::entity as tickets;
use crate::outbox::entity as outbox;

const EVERY: Duration = Duration::from_secs(3600);

/// Rows one round deleted, per table.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Trimmed {
    pub idempotency_keys: u64,
    pub outbox_rows: u64,
    pub fence_rows: u64,
    pub tickets: u64,
    pub death_counters: u64,
}

pub async fn run(
    db: DatabaseConnection,
    fence_retention_days: u32,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    loop {
        if let Err(e) = once(&db, fence_retention_days).await {
            tracing::warn!(error = %e, "housekeeping round failed");
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(EVERY) => {}
        }
    }
}

/// One round.
pub async fn once(
    db: &DatabaseConnection,
    fence_retention_days: u32,
) -> Result<Trimmed, sea_orm::DbErr> {
    let now = Utc::now();
    let t = Trimmed {
        idempotency_keys: idempotency::purge_older_than(db, now - chrono::Duration::hours(48))
            .await?,
        outbox_rows: outbox::Entity::delete_many()
            .filter(outbox::Column::PublishedAt.lt(now - chrono::Duration::days(7)))
            .exec(db)
            .await?
            .rows_affected,
        fence_rows: fence::Entity::delete_many()
            .filter(
                fence::Column::ProcessedAt
                    .lt(now - chrono::Duration::days(i64::from(fence_retention_days))),
            )
            .exec(db)
            .await?
            .rows_affected,
        death_counters: deaths::Entity::delete_many()
            .filter(
                deaths::Column::UpdatedAt
                    .lt(now - chrono::Duration::days(i64::from(fence_retention_days))),
            )
            .exec(db)
            .await?
            .rows_affected,
        tickets: tickets::Entity::delete_many()
            .filter(tickets::Column::ExpiresAt.lt(now - chrono::Duration::hours(1)))
            .exec(db)
            .await?
            .rows_affected,
    };
    if t != Trimmed::default() {
        tracing::info!(trimmed = ?t, "housekeeping trimmed old rows");
    }
    Ok(t)
}
