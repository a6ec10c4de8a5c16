//! The embedded broker: RabbitMQ's delivery semantics inside one process, for
//! development, demos and small installs.
//!
//! Queues live in memory for speed and in a SQLite file for durability: a publish
//! returns only after its row committed (the "confirm"), settles update the row, and on
//! start every row is loaded back, so a crash loses no accepted message and unsettled
//! ones are delivered again. Writes go through one writer task that commits whatever
//! has queued up in one transaction (group commit). The file is opened in exclusive
//! locking mode: a second process cannot open it and double-deliver.

mod queues;
mod settle;
mod store;
mod subscription;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement, Value};
use tokio::sync::{Notify, Semaphore, mpsc, oneshot};

use super::topology::Topology;
use super::{Broker, BrokerError, FanOut, Outgoing, QueueSpec, Subscription};
use subscription::EmbeddedSubscription;

/// Most statements one writer transaction takes.
pub(super) const WRITER_BATCH: usize = 1024;

pub struct EmbeddedBroker {
    inner: Arc<Inner>,
}

pub(super) struct Inner {
    topology: Topology,
    /// Work queues by full name; only declared queues route.
    queues: Mutex<HashMap<String, Arc<QueueState>>>,
    writer: mpsc::UnboundedSender<Op>,
    next_id: Mutex<i64>,
    db: DatabaseConnection,
    /// Progress events: in-process fan-out.
    events: tokio::sync::broadcast::Sender<FanOut>,
}

#[derive(Debug)]
pub(super) struct Message {
    id: i64,
    body: Vec<u8>,
    redelivered: bool,
}

#[derive(Default)]
pub(super) struct QueueState {
    state: Mutex<Queued>,
    notify: Notify,
}

#[derive(Default)]
struct Queued {
    ready: VecDeque<Message>,
    /// Delayed (retry tier or business delay): (due time in epoch ms, id) → message.
    delayed: BTreeMap<(i64, i64), Message>,
}

impl Queued {
    /// Moves due delayed messages to the ready queue; returns the next due time.
    fn promote(&mut self, now: i64) -> Option<i64> {
        while let Some(entry) = self.delayed.first_entry() {
            if entry.key().0 > now {
                return Some(entry.key().0);
            }
            self.ready.push_back(entry.remove());
        }
        None
    }
}

pub(super) enum Op {
    Insert {
        id: i64,
        queue: String,
        body: Vec<u8>,
        ready_at: i64,
        done: Option<oneshot::Sender<Result<(), String>>>,
    },
    Delete(i64),
    Move {
        id: i64,
        queue: String,
        body: Vec<u8>,
        ready_at: i64,
        headers: Option<String>,
        done: oneshot::Sender<Result<(), String>>,
    },
    /// Commit what came before, then stop and close the file.
    Close(oneshot::Sender<()>),
}

pub(super) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub(super) fn store_err(e: impl std::fmt::Display) -> BrokerError {
    BrokerError::Store(e.to_string())
}

#[async_trait]
impl Broker for EmbeddedBroker {
    fn topology(&self) -> &Topology {
        &self.inner.topology
    }

    async fn declare(&self) -> Result<(), BrokerError> {
        let fresh = {
            let mut queues = self.inner.queues.lock().map_err(store_err)?;
            let mut fresh = false;
            for q in &self.inner.topology.queues {
                if !queues.contains_key(&q.name) {
                    queues.insert(q.name.clone(), Arc::new(QueueState::default()));
                    fresh = true;
                }
            }
            fresh
        };
        if fresh {
            self.load().await?;
        }
        Ok(())
    }

    async fn publish_batch(&self, messages: &[Outgoing]) -> Result<(), BrokerError> {
        let mut pending = Vec::with_capacity(messages.len());
        for m in messages {
            let (queue, ready_at) = self.inner.route(m.target);
            let Some(state) = self.inner.queue_state(&queue) else {
                return Err(BrokerError::Unroutable { target: queue });
            };
            let id = self.inner.next_id()?;
            let (done, confirmed) = oneshot::channel();
            self.inner
                .writer
                .send(Op::Insert {
                    id,
                    queue,
                    body: m.body.clone(),
                    ready_at,
                    done: Some(done),
                })
                .map_err(|_| BrokerError::Store("writer stopped".into()))?;
            pending.push((state, id, m.body.clone(), ready_at, confirmed));
        }
        for (state, id, body, ready_at, confirmed) in pending {
            confirmed
                .await
                .map_err(|_| BrokerError::Store("writer stopped".into()))?
                .map_err(BrokerError::Store)?;
            let msg = Message {
                id,
                body,
                redelivered: false,
            };
            self.inner.enqueue(&state, msg, ready_at);
        }
        Ok(())
    }

    async fn publish_events(&self, topic: &str, bodies: Vec<Vec<u8>>) -> Result<(), BrokerError> {
        for body in bodies {
            // No subscriber is not an error: what rides the fan-out is stored as well.
            let _ = self.inner.events.send(FanOut {
                topic: topic.to_owned(),
                body,
            });
        }
        Ok(())
    }

    async fn subscribe_events(&self) -> Result<mpsc::Receiver<FanOut>, BrokerError> {
        let mut events = self.inner.events.subscribe();
        let (tx, rx) = mpsc::channel(1024);
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(e) => {
                        if tx.send(e).await.is_err() {
                            return;
                        }
                    }
                    // A lagging listener skips ahead: events are also stored.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        Ok(rx)
    }

    async fn subscribe_at(
        &self,
        queue: &'static QueueSpec,
        prefetch: u16,
    ) -> Result<Box<dyn Subscription>, BrokerError> {
        let resolved = self.inner.topology.queue(queue);
        let state = self.inner.queue_state(&resolved.name).ok_or_else(|| {
            BrokerError::Protocol(format!("queue {} is not declared", resolved.name))
        })?;
        Ok(Box::new(EmbeddedSubscription {
            inner: self.inner.clone(),
            spec: queue,
            state,
            permits: Arc::new(Semaphore::new(usize::from(prefetch))),
            prefetch,
            cancelled: false,
        }))
    }

    async fn drain_dead(
        &self,
        queue: &'static QueueSpec,
        max: usize,
        keep: &super::KeepDead,
    ) -> Result<usize, BrokerError> {
        // DLQs live only in the store (nothing consumes them in memory).
        let dlq = self.inner.topology.queue(queue).dlq;
        let rows = self
            .inner
            .db
            .query_all_raw(Statement::from_sql_and_values(
                self.inner.db.get_database_backend(),
                "SELECT id, body, headers FROM messages WHERE queue = ? ORDER BY id LIMIT ?",
                [Value::from(dlq.as_str()), Value::from(max as i64)],
            ))
            .await
            .map_err(store_err)?;
        let mut taken = 0;
        for row in rows {
            let id: i64 = row.try_get("", "id").map_err(store_err)?;
            let body: Vec<u8> = row.try_get("", "body").map_err(store_err)?;
            let headers: Option<String> = row.try_get("", "headers").map_err(store_err)?;
            let reason = headers
                .as_deref()
                .and_then(|h| serde_json::from_str::<serde_json::Value>(h).ok())
                .and_then(|h| h["reason"].as_str().map(str::to_owned));
            let copy = super::DeadCopy {
                body,
                conveyor_reason: reason,
                broker_reason: None,
                broker_queue: None,
                broker_count: 0,
            };
            if let Err(e) = keep(copy).await {
                tracing::warn!(queue = %dlq, error = %e, "dead letter kept in its DLQ for now");
                break;
            }
            self.inner
                .writer
                .send(Op::Delete(id))
                .map_err(|_| BrokerError::Store("writer stopped".into()))?;
            taken += 1;
        }
        Ok(taken)
    }

    async fn depth(&self, queue_name: &str) -> Result<u64, BrokerError> {
        if let Some(q) = self.inner.queue_state(queue_name) {
            let st = q.state.lock().map_err(store_err)?;
            return Ok(st.ready.len() as u64);
        }
        // Retry tiers hold the delayed messages of their work queue.
        for q in &self.inner.topology.queues {
            if let Some(idx) = q.retry.iter().position(|(_, n)| n == queue_name) {
                let Some(state) = self.inner.queue_state(&q.name) else {
                    return Ok(0);
                };
                let st = state.state.lock().map_err(store_err)?;
                // Delayed messages are not tagged by tier; report them all on the first.
                return Ok(if idx == 0 { st.delayed.len() as u64 } else { 0 });
            }
        }
        let row = self
            .inner
            .db
            .query_one_raw(Statement::from_sql_and_values(
                self.inner.db.get_database_backend(),
                "SELECT COUNT(*) AS n FROM messages WHERE queue = ?",
                [Value::from(queue_name)],
            ))
            .await
            .map_err(store_err)?;
        Ok(row
            .and_then(|r| r.try_get::<i64>("", "n").ok())
            .unwrap_or(0) as u64)
    }

    async fn ping(&self) -> Result<(), BrokerError> {
        self.inner
            .db
            .execute_unprepared("SELECT 1")
            .await
            .map(|_| ())
            .map_err(store_err)
    }

    async fn close(&self) {
        // Pending writes commit first; closing the file releases its exclusive lock.
        let (done, closed) = oneshot::channel();
        if self.inner.writer.send(Op::Close(done)).is_ok() {
            let _ = closed.await;
        }
    }

    async fn teardown(&self) -> Result<(), BrokerError> {
        self.inner
            .db
            .execute_unprepared("DELETE FROM messages")
            .await
            .map(|_| ())
            .map_err(store_err)
    }
}
