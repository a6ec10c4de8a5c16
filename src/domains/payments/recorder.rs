//! Webhooks record their events through a group commit ([`crate::db::group_commit`]):
//! the events of concurrent deliveries go into the inbox, with their `payments.apply`
//! messages, in one transaction. A provider waits on our answer, and each answer is
//! only sent once its event is durable, so batching costs nothing in safety and saves
//! a transaction per delivery.

use std::time::Duration;

use async_trait::async_trait;
use sea_orm::DatabaseConnection;

use super::service::Payments;
use super::store::{self, Incoming};
use crate::db::group_commit::{Batch, GroupCommit};
use crate::outbox::{OutboxError, Relay};

/// Most events per transaction.
const BATCH: usize = 32;

pub type Recorder = GroupCommit<Inbox>;

pub struct Inbox {
    db: DatabaseConnection,
    relay: Relay,
    max_payload: usize,
}

/// Starts the recorder's writers: `writers` transactions at once, each waiting up to
/// `linger` for more events (`database.group_commit_*`).
pub fn start(payments: &Payments, writers: u32, linger: Duration) -> Recorder {
    let inbox = Inbox {
        db: payments.db.clone(),
        relay: payments.relay.clone(),
        max_payload: payments.max_payload,
    };
    GroupCommit::start(inbox, &payments.db, writers, BATCH, linger)
}

#[async_trait]
impl Batch for Inbox {
    type Item = Incoming;
    /// Whether the event is new (false: a redelivery, recorded before).
    type Output = bool;
    type Error = OutboxError;

    async fn commit(
        &self,
        batch: &[Incoming],
    ) -> Result<Vec<Result<bool, OutboxError>>, OutboxError> {
        if let [one] = batch {
            // Alone, a unique violation is simply a redelivery ([`store::record`]).
            return Ok(vec![store::record(&self.db, one, self.max_payload).await]);
        }
        let txn = crate::db::begin_read_committed(&self.db).await?;
        let fresh = store::record_many(&txn, batch, self.max_payload).await?;
        txn.commit().await?;
        Ok(fresh.into_iter().map(Ok).collect())
    }

    fn committed(&self, results: &[Result<bool, OutboxError>], _: Duration) {
        metrics::histogram!("conveyor_payments_record_batch_size").record(results.len() as f64);
        if results.iter().any(|r| matches!(r, Ok(true))) {
            self.relay.notify();
        }
    }

    fn stopped() -> OutboxError {
        OutboxError::Db(sea_orm::DbErr::Custom("payment recorder stopped".into()))
    }
}
