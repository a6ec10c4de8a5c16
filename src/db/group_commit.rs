//! Group commit: concurrent requests that each need a small write are written together,
//! one transaction (one multi-row statement per table, one commit) for whatever queued
//! while the previous batch committed, instead of one transaction each. An idle server
//! adds no delay: a batch is what is already waiting, topped up for at most `linger`.
//! If a batch fails as a whole, its items are retried one by one, so one bad row cannot
//! fail its neighbours. Task submission and payment webhooks both write this way.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sea_orm::{DatabaseBackend, DatabaseConnection};
use tokio::sync::{Mutex, mpsc, oneshot};

/// What one kind of batch writes.
#[async_trait]
pub trait Batch: Send + Sync + 'static {
    type Item: Send + Sync + 'static;
    type Output: Send + Sync + 'static;
    type Error: std::fmt::Display + Send + Sync + 'static;

    /// Writes `items` in one transaction: one result per item, in order; `Err` when the
    /// batch failed as a whole (then each item is tried alone).
    async fn commit(
        &self,
        items: &[Self::Item],
    ) -> Result<Vec<Result<Self::Output, Self::Error>>, Self::Error>;

    /// After a commit, before the replies go out (metrics, waking the relay, events).
    fn committed(&self, _results: &[Result<Self::Output, Self::Error>], _took: Duration) {}

    /// The error a caller gets when the writers are gone (shutdown).
    fn stopped() -> Self::Error;
}

type Reply<B> = oneshot::Sender<Result<<B as Batch>::Output, <B as Batch>::Error>>;
/// The queue the writers share: an item and where its result goes.
type Queue<B> = Arc<Mutex<mpsc::Receiver<(<B as Batch>::Item, Reply<B>)>>>;

/// The handle requests send their item through.
pub struct GroupCommit<B: Batch> {
    tx: mpsc::Sender<(B::Item, Reply<B>)>,
}

impl<B: Batch> Clone for GroupCommit<B> {
    fn clone(&self) -> Self {
        GroupCommit {
            tx: self.tx.clone(),
        }
    }
}

impl<B: Batch> GroupCommit<B> {
    /// Starts `writers` writers (one on SQLite, which has a single writer anyway), each
    /// committing up to `max` items per batch.
    pub fn start(
        batch: B,
        db: &DatabaseConnection,
        writers: u32,
        max: usize,
        linger: Duration,
    ) -> Self {
        let (tx, rx) = mpsc::channel(max * 8);
        let rx = Arc::new(Mutex::new(rx));
        let writers = if db.get_database_backend() == DatabaseBackend::Sqlite {
            1
        } else {
            writers.max(1)
        };
        // With several writers, a batch stops waiting once half full: the other
        // clients are then likely in batches already committing, and waiting for them
        // would only add latency. A lone writer has no batch in flight while it
        // collects, so every client's next request arrives within the wait: fill it.
        let fill_to = if writers == 1 { max } else { max / 2 };
        let batch = Arc::new(batch);
        for _ in 0..writers {
            let writer = Writer {
                batch: batch.clone(),
                max,
                fill_to,
                linger,
            };
            tokio::spawn(writer.run(rx.clone()));
        }
        GroupCommit { tx }
    }

    /// Commits `item` (with others queued beside it) and returns its result.
    pub async fn write(&self, item: B::Item) -> Result<B::Output, B::Error> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send((item, reply))
            .await
            .map_err(|_| B::stopped())?;
        answer.await.map_err(|_| B::stopped())?
    }
}

struct Writer<B: Batch> {
    batch: Arc<B>,
    max: usize,
    /// A batch this full stops waiting for more.
    fill_to: usize,
    linger: Duration,
}

impl<B: Batch> Writer<B> {
    async fn run(self, rx: Queue<B>) {
        let mut buf = Vec::with_capacity(self.max);
        loop {
            // One writer collects a batch at a time; the others commit theirs meanwhile.
            {
                let mut rx = rx.lock().await;
                if rx.recv_many(&mut buf, self.max).await == 0 {
                    return;
                }
                // A small batch waits a moment for neighbours: each transaction costs a
                // fixed handful of statements, so fuller batches cost less CPU per item.
                if buf.len() < self.fill_to && !self.linger.is_zero() {
                    let fill = async {
                        while buf.len() < self.fill_to {
                            let room = self.max - buf.len();
                            if rx.recv_many(&mut buf, room).await == 0 {
                                break;
                            }
                        }
                    };
                    let _ = tokio::time::timeout(self.linger, fill).await;
                }
            }
            let (items, replies): (Vec<B::Item>, Vec<Reply<B>>) = buf.drain(..).unzip();
            let started = Instant::now();
            let results = self.commit_batch(&items).await;
            self.batch.committed(&results, started.elapsed());
            for (reply, result) in replies.into_iter().zip(results) {
                let _ = reply.send(result);
            }
        }
    }

    /// One result per item, in order.
    async fn commit_batch(&self, items: &[B::Item]) -> Vec<Result<B::Output, B::Error>> {
        match self.batch.commit(items).await {
            Ok(results) => results,
            Err(e) if items.len() > 1 => {
                tracing::warn!(error = %e, size = items.len(), "batched write failed; retrying one by one");
                let mut results = Vec::with_capacity(items.len());
                for item in items {
                    results.push(match self.batch.commit(std::slice::from_ref(item)).await {
                        Ok(mut r) => r.pop().unwrap_or_else(|| Err(B::stopped())),
                        Err(e) => Err(e),
                    });
                }
                results
            }
            Err(e) => vec![Err(e)],
        }
    }
}
