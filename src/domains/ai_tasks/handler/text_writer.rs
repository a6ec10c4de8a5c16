//! The process's writer of streamed text: the pieces of every running step are
//! group-committed together ([`store::append_text`]: two statements for the whole batch
//! on PostgreSQL) and their events published as one message per batch, so a thousand
//! concurrent streams cost tens of transactions a second, not tens of thousands.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sea_orm::{DatabaseConnection, DbErr, TransactionTrait as _};

use crate::broker::Broker;
use crate::db::group_commit::{Batch, GroupCommit};
use crate::domains::ai_tasks::messages::{TaskEvent, publish_events};
use crate::domains::ai_tasks::store::{self, TextWrite};

/// Writes per batch at most.
const MAX_BATCH: usize = 512;
/// How long a small batch waits for neighbours: well under the 50 ms a stream's pieces
/// are coalesced over, so it adds little to what a reader sees.
const LINGER: Duration = Duration::from_millis(2);

pub type TextWriter = GroupCommit<TextBatch>;

pub struct TextBatch {
    db: DatabaseConnection,
    broker: Arc<dyn Broker>,
}

/// Starts `writers` writers on `db`.
pub fn start(db: DatabaseConnection, broker: Arc<dyn Broker>, writers: u32) -> TextWriter {
    let batch = TextBatch {
        db: db.clone(),
        broker,
    };
    GroupCommit::start(batch, &db, writers, MAX_BATCH, LINGER)
}

#[async_trait]
impl Batch for TextBatch {
    type Item = TextWrite;
    /// Whether the attempt still held its step (its pieces were written).
    type Output = bool;
    type Error = DbErr;

    async fn commit(&self, items: &[TextWrite]) -> Result<Vec<Result<bool, DbErr>>, DbErr> {
        let txn = self.db.begin().await?;
        let written = store::append_text(&txn, items).await?;
        txn.commit().await?;
        let events: Vec<TaskEvent> = written.iter().flatten().flatten().cloned().collect();
        publish_events(self.broker.as_ref(), &events).await;
        Ok(written.into_iter().map(|w| Ok(w.is_some())).collect())
    }

    fn stopped() -> DbErr {
        DbErr::Custom("the text writer stopped".into())
    }
}
