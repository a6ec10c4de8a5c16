//! The process's writer of what running steps report: the progress and streamed text
//! of every running step are group-committed together ([`store::append_reports`]: two
//! statements for the whole batch on PostgreSQL) and their events published as one
//! message per batch, so a thousand concurrent streams cost tens of transactions a
//! second, not tens of thousands.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sea_orm::{
    ConnectionTrait as _, DatabaseBackend, DatabaseConnection, DbErr, TransactionTrait as _,
};

use crate::broker::Broker;
use crate::db::group_commit::{Batch, GroupCommit};
use crate::domains::ai_tasks::messages::{TaskEvent, publish_events};
use crate::domains::ai_tasks::store::{self, ReportWrite};

/// Writes per batch at most. Small batches on several writers beat big ones: measured
/// with `cargo bench --bench streaming` on PostgreSQL, a batch of ~200 reports took
/// 50-150 ms (every row of it locked meanwhile) where 64 took 3-13 ms, and token
/// latency at 1,000 streams fell from p99 ~450 ms to ~150 ms.
const MAX_BATCH: usize = 64;
/// How long a small batch waits for neighbours: well under the 50 ms a stream's pieces
/// are coalesced over, so it adds little to what a reader sees.
const LINGER: Duration = Duration::from_millis(2);

pub type ReportWriter = GroupCommit<ReportBatch>;

pub struct ReportBatch {
    db: DatabaseConnection,
    broker: Arc<dyn Broker>,
}

/// Starts `writers` writers on `db`.
pub fn start(db: DatabaseConnection, broker: Arc<dyn Broker>, writers: u32) -> ReportWriter {
    let batch = ReportBatch {
        db: db.clone(),
        broker,
    };
    GroupCommit::start(batch, &db, writers, MAX_BATCH, LINGER)
}

#[async_trait]
impl Batch for ReportBatch {
    type Item = ReportWrite;
    /// Whether the attempt still held its step (its reports were written).
    type Output = bool;
    type Error = DbErr;

    async fn commit(&self, items: &[ReportWrite]) -> Result<Vec<Result<bool, DbErr>>, DbErr> {
        let txn = self.db.begin().await?;
        if txn.get_database_backend() == DatabaseBackend::Postgres {
            // Reports are the live view of work whose outcome commits durably with its
            // step: they need not wait for the WAL flush. A database crash may take the
            // last few hundred milliseconds of them (the sequence rolls back with them;
            // the task's result and status are unaffected).
            txn.execute_unprepared("SET LOCAL synchronous_commit = off")
                .await?;
        }
        let written = store::append_reports(&txn, items).await?;
        txn.commit().await?;
        let events: Vec<TaskEvent> = written.iter().flatten().flatten().cloned().collect();
        publish_events(self.broker.as_ref(), &events).await;
        Ok(written.into_iter().map(|w| Ok(w.is_some())).collect())
    }

    fn stopped() -> DbErr {
        DbErr::Custom("the report writer stopped".into())
    }
}
