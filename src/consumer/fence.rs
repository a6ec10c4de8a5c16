//! The processed-message fence: a row per message id whose effect committed. Checks
//! and writes are batched by two tasks (one `IN (…)` query, one multi-row insert per
//! batch: group commit; on PostgreSQL both take their ids as one array), so per-message
//! work costs a share of a round trip instead of one each; callers wait until their row
//! committed before they ack.

use chrono::Utc;
use sea_orm::sea_query::OnConflict;
use std::collections::HashSet;

use sea_orm::{
    ActiveValue::Set, ConnectionTrait, DatabaseBackend, DatabaseConnection, DbErr, EntityTrait,
};
use tokio::sync::{mpsc, oneshot};

use super::fence_entity as entity;

type Request = (
    Vec<String>,
    &'static str,
    oneshot::Sender<Result<(), String>>,
);
/// Rows per insert statement (three bound values each), ids per lookup.
const MAX_ROWS: usize = 2000;

/// Ids to look up, and where to send those of them that have a row.
type Check = (
    Vec<String>,
    oneshot::Sender<Result<HashSet<String>, String>>,
);

#[derive(Clone)]
pub struct Fence {
    tx: mpsc::Sender<Request>,
    checks: mpsc::Sender<Check>,
}

impl Fence {
    /// Starts the reader and writer tasks; at most `batch` ids per statement.
    pub fn start(db: DatabaseConnection, batch: usize) -> Self {
        let (tx, rx) = mpsc::channel(batch * 4);
        let (checks, check_rx) = mpsc::channel(batch * 4);
        // Sequential scans off for the fence's two statements: the check is prepared, and
        // a prepared `= ANY($1)` gets a generic plan after five runs; one made while the
        // table is still small (a new database filling up) is a sequential scan, kept
        // until autovacuum next analyzes the table (seen in `cargo bench --bench
        // delivery`: 24–41 ms per check at 20,000 rows instead of 0.4 ms). The reader and
        // the writer each hold one of its two connections.
        let db = crate::db::own_sessions(&db, &[("enable_seqscan", "off")], 2);
        tokio::spawn(writer(db.clone(), rx, batch));
        tokio::spawn(reader(db, check_rx, batch));
        Fence { tx, checks }
    }

    /// Which of `message_ids` were already processed (a batch's ids in one request to
    /// the reader, which merges concurrent requests into one query).
    pub async fn processed(&self, message_ids: &[&str]) -> Result<HashSet<String>, String> {
        if message_ids.is_empty() {
            return Ok(HashSet::new());
        }
        let (done, answer) = oneshot::channel();
        let ids = message_ids.iter().map(|id| (*id).to_owned()).collect();
        self.checks
            .send((ids, done))
            .await
            .map_err(|_| "fence reader stopped".to_owned())?;
        answer
            .await
            .map_err(|_| "fence reader stopped".to_owned())?
    }

    /// Records every id of `message_ids` as processed (a batch's successes, one request
    /// to the writer); returns once the rows committed.
    pub async fn mark_many(
        &self,
        message_ids: &[&str],
        queue_key: &'static str,
    ) -> Result<(), String> {
        if message_ids.is_empty() {
            return Ok(());
        }
        let (done, committed) = oneshot::channel();
        let ids = message_ids.iter().map(|id| (*id).to_owned()).collect();
        self.tx
            .send((ids, queue_key, done))
            .await
            .map_err(|_| "fence writer stopped".to_owned())?;
        committed
            .await
            .map_err(|_| "fence writer stopped".to_owned())?
    }
}

/// Records `message_ids` as processed inside the caller's transaction (one multi-row
/// insert), for handlers whose effect and fence must commit together.
pub async fn mark_many_in(
    txn: &impl ConnectionTrait,
    message_ids: &[&str],
    queue_key: &str,
) -> Result<(), DbErr> {
    if message_ids.is_empty() {
        return Ok(());
    }
    let mut rows: Vec<(String, String)> = message_ids
        .iter()
        .map(|id| ((*id).to_owned(), queue_key.to_owned()))
        .collect();
    rows.sort();
    rows.dedup_by(|a, b| a.0 == b.0);
    insert(txn, rows).await
}

async fn insert(
    db: &impl ConnectionTrait,
    rows: impl IntoIterator<Item = (String, String)>,
) -> Result<(), DbErr> {
    let now = Utc::now();
    let rows = rows.into_iter().map(|(id, q)| entity::ActiveModel {
        message_id: Set(id),
        queue: Set(q),
        processed_at: Set(now),
    });
    entity::Entity::insert_many(rows)
        .on_conflict(
            // `do_nothing_on` names the key so MySQL gets `ON DUPLICATE KEY UPDATE id = id`
            // (plain `do_nothing` renders an `IGNORE` MariaDB rejects).
            OnConflict::column(entity::Column::MessageId)
                .do_nothing_on([entity::Column::MessageId])
                .to_owned(),
        )
        .exec_without_returning(db)
        .await
        .map(|_| ())
}

/// [`insert`] on PostgreSQL as one statement of fixed text (the ids and queues as two
/// arrays), prepared once per connection. The multi-row `VALUES` form is a statement of
/// its own for every row count (prepared, cached, evicted): in `cargo bench --bench
/// delivery` a write of 256 rows took ~45 ms that way, of which the server executed
/// ~1 ms; as arrays, 1-3 ms, and the fenced one-message-per-call variant ran twice as
/// fast at prefetch 1024.
async fn insert_pg(db: &DatabaseConnection, rows: &[(String, String)]) -> Result<(), DbErr> {
    let (ids, queues): (Vec<&str>, Vec<&str>) =
        rows.iter().map(|(id, q)| (id.as_str(), q.as_str())).unzip();
    sea_orm::sqlx::query(
        "INSERT INTO processed_messages (message_id, queue, processed_at) \
         SELECT id, q, $3 FROM UNNEST($1::text[], $2::text[]) AS r(id, q) \
         ON CONFLICT (message_id) DO NOTHING",
    )
    .bind(ids)
    .bind(queues)
    .bind(Utc::now())
    .execute(db.get_postgres_connection_pool())
    .await
    .map(|_| ())
    .map_err(|e| DbErr::Custom(e.to_string()))
}

/// Answers the checks waiting at once with one query for all their ids (at most
/// `batch` requests merged; a request is never split).
async fn reader(db: DatabaseConnection, mut rx: mpsc::Receiver<Check>, batch: usize) {
    let mut buf = Vec::with_capacity(batch);
    while rx.recv_many(&mut buf, batch).await > 0 {
        let ids: Vec<String> = buf
            .iter()
            .flat_map(|(ids, _)| ids.iter().cloned())
            .collect();
        let found = processed_among(&db, ids).await.map_err(|e| e.to_string());
        for (ids, done) in buf.drain(..) {
            let _ = done.send(match &found {
                Ok(f) => Ok(ids.into_iter().filter(|id| f.contains(id)).collect()),
                Err(e) => Err(e.clone()),
            });
        }
    }
}

/// Which of `ids` have a fence row, in statements of at most [`MAX_ROWS`] ids
/// (requests carry whole batches, and the engines limit bound values).
async fn processed_among(
    db: &DatabaseConnection,
    ids: Vec<String>,
) -> Result<HashSet<String>, DbErr> {
    let mut found = HashSet::new();
    for chunk in ids.chunks(MAX_ROWS) {
        found.extend(processed_among_chunk(db, chunk.to_vec()).await?);
    }
    Ok(found)
}

async fn processed_among_chunk(
    db: &DatabaseConnection,
    ids: Vec<String>,
) -> Result<HashSet<String>, DbErr> {
    use sea_orm::{ColumnTrait as _, QueryFilter as _, QuerySelect as _};
    if db.get_database_backend() == DatabaseBackend::Postgres {
        // The ids as one array: one statement text, prepared once per connection.
        let rows: Vec<(String,)> = sea_orm::sqlx::query_as(
            "SELECT message_id FROM processed_messages WHERE message_id = ANY($1)",
        )
        .bind(ids)
        .fetch_all(db.get_postgres_connection_pool())
        .await
        .map_err(|e| DbErr::Custom(e.to_string()))?;
        return Ok(rows.into_iter().map(|(id,)| id).collect());
    }
    entity::Entity::find()
        .select_only()
        .column(entity::Column::MessageId)
        .filter(entity::Column::MessageId.is_in(ids))
        .into_tuple::<String>()
        .all(db)
        .await
        .map(|v| v.into_iter().collect())
}

async fn writer(db: DatabaseConnection, mut rx: mpsc::Receiver<Request>, batch: usize) {
    let mut buf = Vec::with_capacity(batch);
    while rx.recv_many(&mut buf, batch).await > 0 {
        let mut rows: Vec<(String, String)> = buf
            .iter()
            .flat_map(|(ids, q, _)| ids.iter().map(|id| (id.clone(), (*q).to_owned())))
            .collect();
        // The same id twice in one statement is a conflict with itself on some engines.
        rows.sort();
        rows.dedup_by(|a, b| a.0 == b.0);
        // Requests carry whole batches: keep each statement well under the engines'
        // bind-parameter limits (SQLite's is the lowest). A failure part-way leaves
        // earlier rows written, which is harmless: every row is a committed effect.
        let postgres = db.get_database_backend() == DatabaseBackend::Postgres;
        let mut result = Ok(());
        for chunk in rows.chunks(MAX_ROWS) {
            let written = if postgres {
                insert_pg(&db, chunk).await
            } else {
                insert(&db, chunk.to_vec()).await
            };
            if let Err(e) = written {
                result = Err(e.to_string());
                break;
            }
        }
        if let Err(e) = &result {
            tracing::error!(error = %e, "could not write processed-message fences");
        }
        for (_, _, done) in buf.drain(..) {
            let _ = done.send(result.clone());
        }
    }
}
