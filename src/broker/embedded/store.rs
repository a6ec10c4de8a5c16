//! The broker file: opened in exclusive locking mode, loaded back at start, written by
//! one writer task that commits what queued up in one transaction (group commit).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sea_orm::sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqliteLockingMode, SqliteSynchronous,
};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, SqlxSqliteConnector, Statement, TransactionTrait, Value,
};
use tokio::sync::mpsc;

use super::EmbeddedBroker;
use super::Inner;
use super::Message;
use super::Op;
use super::WRITER_BATCH;
use super::store_err;
use crate::broker::BrokerError;
use crate::broker::settings::BrokerSettings;
use crate::broker::topology::Topology;

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
    pub(super) async fn load(&self) -> Result<(), BrokerError> {
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
