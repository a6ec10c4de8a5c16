//! Group commit for submissions: concurrent `POST /v1/tasks` requests are written in one
//! transaction (one multi-row insert per table, one commit) instead of one each. A batch
//! is whatever queued while the previous one committed, so an idle server adds no
//! delay. If a batch fails as a whole, its submissions are retried one by one so one bad
//! row cannot fail its neighbours.

use std::sync::Arc;

use sea_orm::{DatabaseConnection, TransactionTrait};
use tokio::sync::{Mutex, mpsc, oneshot};

use super::messages::TaskEvent;
use super::store::{self, NewTask, StoreError, Task};

type Reply = oneshot::Sender<Result<(Task, TaskEvent), StoreError>>;

/// Most submissions per transaction.
const BATCH: usize = 128;
/// Transactions in flight at once on a server database.
const WRITERS: usize = 4;

#[derive(Clone)]
pub struct Submitter {
    tx: mpsc::Sender<(NewTask, Reply)>,
}

impl Submitter {
    /// Starts the writers: several on a server database, so batches commit in parallel
    /// on the pool; one on SQLite, which has a single writer anyway.
    pub fn start(db: DatabaseConnection, max_payload: usize) -> Self {
        let (tx, rx) = mpsc::channel(BATCH * 8);
        let rx = Arc::new(Mutex::new(rx));
        let writers = if db.get_database_backend() == sea_orm::DatabaseBackend::Sqlite {
            1
        } else {
            WRITERS
        };
        for _ in 0..writers {
            tokio::spawn(run(db.clone(), rx.clone(), max_payload));
        }
        Submitter { tx }
    }

    /// Commits the submission (with others queued beside it) and returns the task.
    pub async fn submit(&self, new: NewTask) -> Result<(Task, TaskEvent), StoreError> {
        let stopped = || StoreError::Db(sea_orm::DbErr::Custom("submitter stopped".into()));
        let (reply, answer) = oneshot::channel();
        self.tx.send((new, reply)).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

async fn run(
    db: DatabaseConnection,
    rx: Arc<Mutex<mpsc::Receiver<(NewTask, Reply)>>>,
    max_payload: usize,
) {
    let mut buf = Vec::with_capacity(BATCH);
    loop {
        // One writer collects a batch at a time; the others commit theirs meanwhile.
        if rx.lock().await.recv_many(&mut buf, BATCH).await == 0 {
            return;
        }
        let (batch, replies): (Vec<NewTask>, Vec<Reply>) = buf.drain(..).unzip();
        match commit(&db, &batch, max_payload).await {
            Ok(results) => {
                for (reply, result) in replies.into_iter().zip(results) {
                    let _ = reply.send(result);
                }
            }
            Err(e) if batch.len() > 1 => {
                tracing::warn!(error = %e, size = batch.len(), "batched submission failed; retrying one by one");
                for (new, reply) in batch.into_iter().zip(replies) {
                    let result = match commit(&db, std::slice::from_ref(&new), max_payload).await {
                        Ok(mut r) => r.pop().unwrap_or_else(|| {
                            Err(StoreError::Db(sea_orm::DbErr::Custom("no result".into())))
                        }),
                        Err(e) => Err(e),
                    };
                    let _ = reply.send(result);
                }
            }
            Err(e) => {
                for reply in replies {
                    let _ = reply.send(Err(StoreError::Db(sea_orm::DbErr::Custom(e.to_string()))));
                }
            }
        }
    }
}

async fn commit(
    db: &DatabaseConnection,
    batch: &[NewTask],
    max_payload: usize,
) -> Result<Vec<Result<(Task, TaskEvent), StoreError>>, StoreError> {
    let txn = db.begin().await?;
    let results = store::submit_many(&txn, batch, max_payload).await?;
    txn.commit().await?;
    Ok(results)
}
