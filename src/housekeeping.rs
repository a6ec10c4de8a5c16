//! Housekeeping: tables that grow with traffic are trimmed once an hour, each kept as
//! long as the guarantee it backs needs. The module that owns a table says how
//! ([`Retention`]): idempotency keys 48 hours (clients are promised at least 24);
//! published outbox rows 7 days (audits of what went out); the processed-message fence
//! and the crash-loop counters `consumer.fence_retention_days`; WebSocket tickets an hour
//! after they expired. The composition root hands the list in; this module names no
//! table. Several processes may run it: deletes are idempotent.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use sea_orm::{DatabaseConnection, DbErr};
use tokio_util::sync::CancellationToken;

const EVERY: Duration = Duration::from_secs(3600);

/// How one table is trimmed, contributed by the module that owns it.
#[derive(Clone, Copy)]
pub struct Retention {
    /// For logs and the round's report.
    pub table: &'static str,
    /// Rows older than this go (by the table's own clock column).
    pub keep: Duration,
    /// Deletes the rows older than the cutoff; how many went.
    pub trim: Trim,
}

/// Deletes a table's rows older than the cutoff; how many went.
pub type Trim =
    for<'a> fn(&'a DatabaseConnection, DateTime<Utc>) -> BoxFuture<'a, Result<u64, DbErr>>;

pub async fn run(
    db: DatabaseConnection,
    rules: Vec<Retention>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    loop {
        if let Err(e) = once(&db, &rules).await {
            tracing::warn!(error = %e, "housekeeping round failed");
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(EVERY) => {}
        }
    }
}

/// One round: rows deleted, per table.
pub async fn once(
    db: &DatabaseConnection,
    rules: &[Retention],
) -> Result<BTreeMap<&'static str, u64>, DbErr> {
    let mut trimmed = BTreeMap::new();
    for rule in rules {
        let keep = chrono::Duration::from_std(rule.keep).unwrap_or(chrono::Duration::MAX);
        let cutoff = Utc::now()
            .checked_sub_signed(keep)
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        trimmed.insert(rule.table, (rule.trim)(db, cutoff).await?);
    }
    if trimmed.values().any(|n| *n > 0) {
        tracing::info!(?trimmed, "housekeeping trimmed old rows");
    }
    Ok(trimmed)
}
