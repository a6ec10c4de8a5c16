//! The collector's schedule: [`crate::storage::sweep::sweep`] every `storage.sweep_secs`.
//! Safe on several processes at once: removals are idempotent (a missing object is not
//! an error, a row purged twice releases its bytes once).

use std::sync::Arc;
use std::time::Duration;

use sea_orm::DatabaseConnection;
use tokio_util::sync::CancellationToken;

use crate::storage::{Storage, sweep};

pub async fn run(
    db: DatabaseConnection,
    storage: Arc<Storage>,
    token: CancellationToken,
) -> anyhow::Result<()> {
    let every = Duration::from_secs(storage.settings.sweep_secs);
    loop {
        tokio::select! {
            _ = token.cancelled() => return Ok(()),
            _ = tokio::time::sleep(every) => {}
        }
        if let Err(e) = sweep::sweep(&db, &storage, chrono::Utc::now()).await {
            tracing::warn!(error = %e, "storage collector pass failed; retrying next interval");
        }
    }
}
