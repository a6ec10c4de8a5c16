//! Lease heartbeats: each running step beats every `ai.heartbeat_ms`, and the process's
//! beats are group-committed ([`store::beat`]: two statements for the whole batch), so
//! a thousand running steps cost a few transactions a second, not a thousand. A beat
//! that finds the lease gone (canceled, re-driven) stops the step.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use sea_orm::{
    ConnectionTrait as _, DatabaseBackend, DatabaseConnection, DbErr, TransactionTrait as _,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::AiTaskHandler;
use crate::db::group_commit::{Batch, GroupCommit};
use crate::domains::ai_tasks::store;

/// Leases per batch at most.
const MAX_BATCH: usize = 1024;
/// Beats are not in a hurry: a fuller batch is worth a few milliseconds.
const LINGER: Duration = Duration::from_millis(10);

pub type BeatWriter = GroupCommit<BeatBatch>;

pub struct BeatBatch {
    db: DatabaseConnection,
}

/// Starts `writers` writers on `db`.
pub fn start(db: DatabaseConnection, writers: u32) -> BeatWriter {
    GroupCommit::start(
        BeatBatch { db: db.clone() },
        &db,
        writers,
        MAX_BATCH,
        LINGER,
    )
}

#[async_trait]
impl Batch for BeatBatch {
    /// (task, attempt).
    type Item = (String, i32);
    /// Whether the lease is still held.
    type Output = bool;
    type Error = DbErr;

    async fn commit(&self, items: &[(String, i32)]) -> Result<Vec<Result<bool, DbErr>>, DbErr> {
        let txn = self.db.begin().await?;
        if txn.get_database_backend() == DatabaseBackend::Postgres {
            // A beat lost in a database crash only makes a lease look older: the step
            // beats again within a second, and a re-drive is fenced by the attempt.
            txn.execute_unprepared("SET LOCAL synchronous_commit = off")
                .await?;
        }
        let held = store::beat(&txn, items).await?;
        txn.commit().await?;
        Ok(held.into_iter().map(Ok).collect())
    }

    fn stopped() -> DbErr {
        DbErr::Custom("the heartbeat writer stopped".into())
    }
}

/// When a running step's lease was last refreshed: by its claim, a heartbeat, or a
/// report (every report refreshes it too).
pub(super) struct Beat {
    start: Instant,
    /// Milliseconds after `start`.
    last_ms: AtomicU64,
}

impl Beat {
    /// A lease just claimed.
    pub(super) fn new() -> Self {
        Beat {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    pub(super) fn mark(&self) {
        let ms = self.start.elapsed().as_millis() as u64;
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

impl AiTaskHandler {
    /// Keeps the lease fresh while the step is silent (a step that reports refreshes it
    /// with its reports); cancels `stop` when the task is no longer ours (canceled, or
    /// re-driven to another attempt). Runs until `stop`; polled beside the step (not
    /// spawned: a quick step costs no task).
    pub(super) async fn heartbeat(
        &self,
        id: &str,
        attempt: i32,
        beat: &Beat,
        stop: &CancellationToken,
    ) {
        let every = Duration::from_millis(self.ai.heartbeat_ms);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep_until(beat.last() + every) => {}
            }
            if beat.last() + every > Instant::now() {
                continue; // a report refreshed it meanwhile
            }
            match self.beats.write((id.to_owned(), attempt)).await {
                Ok(false) => {
                    tracing::info!(task = %id, attempt, "task no longer ours (canceled or re-driven); stopping");
                    stop.cancel();
                    return;
                }
                Ok(true) => beat.mark(),
                Err(e) => {
                    tracing::warn!(task = %id, error = %e, "heartbeat failed");
                    // Try again after a full interval, not at once.
                    beat.mark();
                }
            }
        }
    }
}
