//! The embedded broker: RabbitMQ's delivery semantics inside one process, for
//! development, demos and small installs.
//!
//! Queues live in memory for speed and in a SQLite file for durability: a publish
//! returns only after its row committed (the "confirm"), settles update the row, and on
//! start every row is loaded back, so a crash loses no accepted message and unsettled
//! ones are delivered again. Writes go through one writer task that commits whatever
//! has queued up in one transaction (group commit). The file is opened in exclusive
//! locking mode: a second process cannot open it and double-deliver.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use sea_orm::sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqliteLockingMode, SqliteSynchronous,
};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, SqlxSqliteConnector, Statement, TransactionTrait, Value,
};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use super::topology::{Target, Topology};
use super::{
    Broker, BrokerError, DeadLetterInfo, Delivery, Outgoing, QueueSpec, Settle, Subscription,
};
use crate::config::BrokerSettings;

/// Most statements one writer transaction takes.
const WRITER_BATCH: usize = 1024;

pub struct EmbeddedBroker {
    inner: Arc<Inner>,
}

struct Inner {
    topology: Topology,
    /// Work queues by full name; only declared queues route.
    queues: Mutex<HashMap<String, Arc<QueueState>>>,
    writer: mpsc::UnboundedSender<Op>,
    next_id: Mutex<i64>,
    db: DatabaseConnection,
    /// Progress events: in-process fan-out.
    events: tokio::sync::broadcast::Sender<Vec<u8>>,
}

#[derive(Debug)]
struct Message {
    id: i64,
    body: Vec<u8>,
    redelivered: bool,
}

#[derive(Default)]
struct QueueState {
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

enum Op {
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

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn store_err(e: impl std::fmt::Display) -> BrokerError {
    BrokerError::Store(e.to_string())
}

impl EmbeddedBroker {
    /// Opens (or creates) the broker file and loads every stored message.
    pub async fn open(settings: &BrokerSettings, topology: Topology) -> Result<Self, BrokerError> {
        if let Some(dir) = settings
            .embedded_path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir).map_err(store_err)?;
        }
        let opts = SqliteConnectOptions::new()
            .filename(&settings.embedded_path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .locking_mode(SqliteLockingMode::Exclusive)
            .busy_timeout(Duration::from_millis(100));
        let pool = sea_orm::sqlx::pool::PoolOptions::new()
            .max_connections(1)
            .connect_with(opts)
            .await
            .map_err(|e| store_err(format!("opening {}: {e}", settings.embedded_path.display())))?;
        let db = SqlxSqliteConnector::from_sqlx_sqlite_pool(pool);
        for sql in [
            "CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, \
             body BLOB NOT NULL, ready_at INTEGER NOT NULL, headers TEXT)",
            "CREATE INDEX IF NOT EXISTS messages_queue ON messages (queue, id)",
        ] {
            db.execute_unprepared(sql).await.map_err(|e| {
                store_err(format!(
                    "{e} (is another conveyor process using {}?)",
                    settings.embedded_path.display()
                ))
            })?;
        }
        let max: Option<i64> = db
            .query_one_raw(Statement::from_string(
                db.get_database_backend(),
                "SELECT MAX(id) AS m FROM messages",
            ))
            .await
            .map_err(store_err)?
            .and_then(|r| r.try_get::<Option<i64>>("", "m").ok().flatten());
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(writer(db.clone(), rx));
        let broker = EmbeddedBroker {
            inner: Arc::new(Inner {
                topology,
                queues: Mutex::new(HashMap::new()),
                writer: tx,
                next_id: Mutex::new(max.unwrap_or(0)),
                db,
                events: tokio::sync::broadcast::channel(4096).0,
            }),
        };
        Ok(broker)
    }

    /// Loads stored messages of declared queues back into memory (after `declare`).
    async fn load(&self) -> Result<(), BrokerError> {
        let rows = self
            .inner
            .db
            .query_all_raw(Statement::from_string(
                self.inner.db.get_database_backend(),
                "SELECT id, queue, body, ready_at FROM messages ORDER BY id",
            ))
            .await
            .map_err(store_err)?;
        let queues = self.inner.queues.lock().map_err(store_err)?.clone();
        for row in rows {
            let queue: String = row.try_get("", "queue").map_err(store_err)?;
            let Some(q) = queues.get(&queue) else {
                continue;
            };
            let msg = Message {
                id: row.try_get("", "id").map_err(store_err)?,
                body: row.try_get("", "body").map_err(store_err)?,
                redelivered: true,
            };
            let ready_at: i64 = row.try_get("", "ready_at").map_err(store_err)?;
            let mut st = q.state.lock().map_err(store_err)?;
            if st.ready.iter().any(|m| m.id == msg.id)
                || st.delayed.values().any(|m| m.id == msg.id)
            {
                continue;
            }
            st.delayed.insert((ready_at, msg.id), msg);
        }
        for q in queues.values() {
            q.notify.notify_waiters();
        }
        Ok(())
    }
}

impl Inner {
    fn queue_state(&self, name: &str) -> Option<Arc<QueueState>> {
        self.queues.lock().ok()?.get(name).cloned()
    }

    fn next_id(&self) -> Result<i64, BrokerError> {
        let mut id = self.next_id.lock().map_err(store_err)?;
        *id += 1;
        Ok(*id)
    }

    /// Work queue and due time for a publish target.
    fn route(&self, target: Target) -> (String, i64) {
        match target {
            Target::Queue(q) => (self.topology.queue(q).name.clone(), 0),
            Target::Delay(d) => (
                self.topology.queue(d.target).name.clone(),
                now_ms() + self.topology.delay(d).delay.as_millis() as i64,
            ),
        }
    }

    fn enqueue(&self, q: &QueueState, msg: Message, ready_at: i64) {
        if let Ok(mut st) = q.state.lock() {
            if ready_at <= now_ms() {
                st.ready.push_back(msg);
            } else {
                st.delayed.insert((ready_at, msg.id), msg);
            }
        }
        q.notify.notify_one();
    }
}

/// Applies queued operations, many per transaction.
async fn writer(db: DatabaseConnection, mut rx: mpsc::UnboundedReceiver<Op>) {
    let backend = db.get_database_backend();
    let mut batch = Vec::with_capacity(WRITER_BATCH);
    while rx.recv_many(&mut batch, WRITER_BATCH).await > 0 {
        let result = async {
            let txn = db.begin().await?;
            let mut deletes: Vec<i64> = Vec::new();
            for op in &batch {
                match op {
                    Op::Insert {
                        id,
                        queue,
                        body,
                        ready_at,
                        ..
                    } => {
                        txn.execute_raw(Statement::from_sql_and_values(
                            backend,
                            "INSERT INTO messages (id, queue, body, ready_at) VALUES (?, ?, ?, ?)",
                            [Value::from(*id), queue.as_str().into(), body.clone().into(), (*ready_at).into()],
                        ))
                        .await?;
                    }
                    Op::Delete(id) => deletes.push(*id),
                    Op::Close(_) => {}
                    Op::Move {
                        id,
                        queue,
                        body,
                        ready_at,
                        headers,
                        ..
                    } => {
                        txn.execute_raw(Statement::from_sql_and_values(
                            backend,
                            "UPDATE messages SET queue = ?, body = ?, ready_at = ?, headers = ? WHERE id = ?",
                            [
                                Value::from(queue.as_str()),
                                body.clone().into(),
                                (*ready_at).into(),
                                headers.clone().into(),
                                (*id).into(),
                            ],
                        ))
                        .await?;
                    }
                }
            }
            for chunk in deletes.chunks(500) {
                let list = chunk.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
                txn.execute_unprepared(&format!("DELETE FROM messages WHERE id IN ({list})"))
                    .await?;
            }
            txn.commit().await
        }
        .await
        .map_err(|e| e.to_string());
        if let Err(e) = &result {
            tracing::error!(error = %e, "embedded broker could not persist a batch");
        }
        let mut closing = None;
        for op in batch.drain(..) {
            match op {
                Op::Insert {
                    done: Some(done), ..
                }
                | Op::Move { done, .. } => {
                    let _ = done.send(result.clone());
                }
                Op::Close(done) => closing = Some(done),
                _ => {}
            }
        }
        if let Some(done) = closing {
            let _ = db.close_by_ref().await;
            let _ = done.send(());
            return;
        }
    }
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

    async fn publish_events(&self, bodies: Vec<Vec<u8>>) -> Result<(), BrokerError> {
        for body in bodies {
            // No subscriber is not an error: events are stored as well.
            let _ = self.inner.events.send(body);
        }
        Ok(())
    }

    async fn subscribe_events(&self) -> Result<mpsc::Receiver<Vec<u8>>, BrokerError> {
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

    async fn subscribe(
        &self,
        queue: &'static QueueSpec,
    ) -> Result<Box<dyn Subscription>, BrokerError> {
        let resolved = self.inner.topology.queue(queue);
        let state = self.inner.queue_state(&resolved.name).ok_or_else(|| {
            BrokerError::Protocol(format!("queue {} is not declared", resolved.name))
        })?;
        Ok(Box::new(EmbeddedSubscription {
            inner: self.inner.clone(),
            spec: queue,
            state,
            permits: Arc::new(Semaphore::new(usize::from(resolved.prefetch))),
            prefetch: resolved.prefetch,
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

struct EmbeddedSubscription {
    inner: Arc<Inner>,
    spec: &'static QueueSpec,
    state: Arc<QueueState>,
    permits: Arc<Semaphore>,
    prefetch: u16,
    cancelled: bool,
}

#[async_trait]
impl Subscription for EmbeddedSubscription {
    async fn next(&mut self) -> Option<Delivery> {
        if self.cancelled {
            return None;
        }
        // Prefetch: at most `prefetch` deliveries of this subscription unsettled at once.
        let permit = self.permits.clone().acquire_owned().await.ok()?;
        loop {
            let notified = self.state.notify.notified();
            let next_due = {
                let mut st = self.state.state.lock().ok()?;
                let next_due = st.promote(now_ms());
                if let Some(msg) = st.ready.pop_front() {
                    let settle = EmbeddedSettle {
                        inner: self.inner.clone(),
                        state: self.state.clone(),
                        spec: self.spec,
                        id: msg.id,
                        body: Some(msg.body.clone()),
                        _permit: permit,
                    };
                    // Another consumer may be waiting for what is left.
                    if !st.ready.is_empty() {
                        self.state.notify.notify_one();
                    }
                    return Some(Delivery::new(
                        self.spec,
                        msg.body,
                        msg.redelivered,
                        Box::new(settle),
                    ));
                }
                next_due
            };
            match next_due {
                Some(due) => {
                    let wait = Duration::from_millis((due - now_ms()).max(1) as u64);
                    let _ = tokio::time::timeout(wait, notified).await;
                }
                None => notified.await,
            }
        }
    }

    async fn cancel(&mut self) {
        self.cancelled = true;
        self.permits.close();
    }

    async fn set_prefetch(&mut self, prefetch: u16) -> Result<(), BrokerError> {
        super::resize_permits(
            &self.permits,
            usize::from(self.prefetch),
            usize::from(prefetch),
        );
        self.prefetch = prefetch;
        Ok(())
    }
}

struct EmbeddedSettle {
    inner: Arc<Inner>,
    state: Arc<QueueState>,
    spec: &'static QueueSpec,
    id: i64,
    /// Kept to hand the message back on requeue.
    body: Option<Vec<u8>>,
    _permit: OwnedSemaphorePermit,
}

impl EmbeddedSettle {
    async fn move_to(
        &self,
        queue: String,
        body: Vec<u8>,
        ready_at: i64,
        headers: Option<String>,
    ) -> Result<(), BrokerError> {
        let (done, confirmed) = oneshot::channel();
        self.inner
            .writer
            .send(Op::Move {
                id: self.id,
                queue,
                body,
                ready_at,
                headers,
                done,
            })
            .map_err(|_| BrokerError::Store("writer stopped".into()))?;
        confirmed
            .await
            .map_err(|_| BrokerError::Store("writer stopped".into()))?
            .map_err(BrokerError::Store)
    }
}

#[async_trait]
impl Settle for EmbeddedSettle {
    async fn ack(self: Box<Self>) -> Result<(), BrokerError> {
        // Not awaited: a lost delete means one redelivery after a crash, which the
        // consumer's dedupe fence absorbs.
        self.inner
            .writer
            .send(Op::Delete(self.id))
            .map_err(|_| BrokerError::Store("writer stopped".into()))
    }

    async fn retry(self: Box<Self>, tier: usize, body: Vec<u8>) -> Result<(), BrokerError> {
        let q = self.inner.topology.queue(self.spec);
        let delay = q
            .retry
            .get(tier)
            .or(q.retry.last())
            .map(|(d, _)| *d)
            .unwrap_or_default();
        let ready_at = now_ms() + delay.as_millis() as i64;
        self.move_to(q.name.clone(), body.clone(), ready_at, None)
            .await?;
        let msg = Message {
            id: self.id,
            body,
            redelivered: false,
        };
        self.inner.enqueue(&self.state, msg, ready_at);
        Ok(())
    }

    async fn dead_letter(
        self: Box<Self>,
        body: Vec<u8>,
        info: &DeadLetterInfo,
    ) -> Result<(), BrokerError> {
        let q = self.inner.topology.queue(self.spec);
        let headers = serde_json::json!({
            "reason": info.reason.as_str(),
            "origin_queue": info.origin_queue,
            "attempts": info.attempts,
            "last_error": info.last_error,
        })
        .to_string();
        self.move_to(q.dlq.clone(), body, now_ms(), Some(headers))
            .await
    }

    fn requeue(mut self: Box<Self>) {
        if let (Some(body), Ok(mut st)) = (self.body.take(), self.state.state.lock()) {
            st.ready.push_front(Message {
                id: self.id,
                body,
                redelivered: true,
            });
        }
        self.state.notify.notify_one();
    }
}
