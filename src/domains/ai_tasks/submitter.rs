//! Group commit for submissions ([`crate::db::group_commit`]): concurrent
//! `POST /v1/tasks` requests are written in one transaction (one multi-row insert per
//! table, one commit) instead of one each. A batch first reserves credits in one
//! statement that charges every user their share only if every balance covers it; if one
//! falls short, the batch rolls back and goes again deciding submission by submission.
//! After a commit the writer wakes the outbox relay and publishes the batch's "accepted"
//! events, once per batch rather than once per request.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sea_orm::DatabaseConnection;

use super::messages::TaskEvent;
use super::messages::publish_events;
use super::store::{self, NewTask, StoreError, Task};
use crate::broker::Broker;
use crate::db::group_commit::{Batch, GroupCommit};
use crate::outbox::Relay;

/// Most submissions per transaction. Each batch size is its own statement shape (six
/// statements per batch), so this also bounds the prepared statements a connection keeps.
const BATCH: usize = 48;

#[derive(Clone)]
pub struct Submitter {
    writer: GroupCommit<Submissions>,
}

impl Submitter {
    /// Starts `writers` writers on a server database, so batches commit in parallel on
    /// the pool; one on SQLite, which has a single writer anyway.
    pub fn start(
        db: DatabaseConnection,
        broker: Arc<dyn Broker>,
        relay: Relay,
        max_payload: usize,
        writers: u32,
        linger: Duration,
    ) -> Self {
        let batch = Submissions {
            db: db.clone(),
            broker,
            relay,
            max_payload,
        };
        Submitter {
            writer: GroupCommit::start(batch, &db, writers, BATCH, linger),
        }
    }

    /// Commits the submission (with others queued beside it) and returns the task.
    pub async fn submit(&self, new: NewTask) -> Result<Task, StoreError> {
        self.writer.write(new).await.map(|(task, _)| task)
    }
}

struct Submissions {
    db: DatabaseConnection,
    broker: Arc<dyn Broker>,
    relay: Relay,
    max_payload: usize,
}

#[async_trait]
impl Batch for Submissions {
    type Item = NewTask;
    type Output = (Task, TaskEvent);
    type Error = StoreError;

    async fn commit(
        &self,
        batch: &[NewTask],
    ) -> Result<Vec<Result<(Task, TaskEvent), StoreError>>, StoreError> {
        if batch.len() > 1 {
            let txn = crate::db::begin_read_committed(&self.db).await?;
            if let Some(results) =
                store::submit_many_if_covered(&txn, batch, self.max_payload).await?
            {
                txn.commit().await?;
                return Ok(results);
            }
            // A balance fell short: start over, deciding submission by submission.
            txn.rollback().await?;
        }
        let txn = crate::db::begin_read_committed(&self.db).await?;
        let results = store::submit_many(&txn, batch, self.max_payload).await?;
        txn.commit().await?;
        Ok(results)
    }

    fn committed(&self, results: &[Result<(Task, TaskEvent), StoreError>], took: Duration) {
        metrics::histogram!("conveyor_submit_batch_size").record(results.len() as f64);
        metrics::histogram!("conveyor_submit_commit_seconds").record(took.as_secs_f64());
        let events = results
            .iter()
            .flatten()
            .map(|(task, event)| {
                super::metrics::credits("reserved", task.cost);
                event.clone()
            })
            .collect();
        announce(&self.relay, &self.broker, events);
    }

    fn stopped() -> StoreError {
        StoreError::Db(sea_orm::DbErr::Custom("submitter stopped".into()))
    }
}

/// After submissions committed: wakes the outbox relay and publishes their "accepted"
/// events off the request path (the events are stored; publishing them only speeds up
/// live views).
pub fn announce(relay: &Relay, broker: &Arc<dyn Broker>, events: Vec<TaskEvent>) {
    if events.is_empty() {
        return;
    }
    relay.notify();
    let broker = broker.clone();
    tokio::spawn(async move { publish_events(broker.as_ref(), &events).await });
}
