//! The outbox relay: publishes pending rows in id order, with confirms, and marks them
//! sent. Several relays may run (one per process): on MySQL/MariaDB and PostgreSQL each
//! round locks its rows with `FOR UPDATE SKIP LOCKED`; SQLite has a single process and
//! a single writer. While the broker is down the relay backs off and retries; rows wait
//! in the table, so nothing committed is lost.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sea_orm::sea_query::{Expr, ExprTrait as _, LockBehavior, LockType};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseBackend, DatabaseConnection, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect, QueryTrait as _,
};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::entity::{self, Column};
use crate::broker::{Broker, BrokerError, Outgoing, Target};
use crate::outbox::settings::OutboxSettings;
use crate::tally::{Tally, What};

#[derive(Clone)]
pub struct Relay {
    db: DatabaseConnection,
    broker: Arc<dyn Broker>,
    settings: OutboxSettings,
    wake: Arc<Notify>,
    tally: Arc<Tally>,
}

impl Relay {
    pub fn new(
        db: DatabaseConnection,
        broker: Arc<dyn Broker>,
        settings: OutboxSettings,
        tally: Arc<Tally>,
    ) -> Self {
        Relay {
            // Bitmap scans off for the relay's sessions. A published row leaves a dead
            // entry in the pending index until vacuum; a plain index scan marks such
            // entries dead as it passes them (and the index drops them when its page
            // fills), a bitmap scan, which the planner prefers for a few expected rows,
            // never does and walks every one of them: 2-3 ms per round after 20,000 rows,
            // a fifth of the database's time in the end-to-end bench, against ~0.1 ms.
            db: crate::db::own_sessions(&db, &[("enable_bitmapscan", "off")], 1),
            broker,
            settings,
            wake: Arc::new(Notify::new()),
            tally,
        }
    }

    /// Tells the relay rows were just committed, so it publishes them without waiting
    /// for its next poll.
    pub fn notify(&self) {
        self.wake.notify_one();
    }

    /// Runs until `shutdown`, then makes one last pass so committed rows go out.
    pub async fn run(self, shutdown: CancellationToken) {
        let min = Duration::from_millis(self.settings.retry_min_ms);
        let max = Duration::from_millis(self.settings.retry_max_ms);
        let poll = Duration::from_millis(self.settings.poll_interval_ms);
        let linger = Duration::from_millis(self.settings.linger_ms);
        let mut backoff = min;
        loop {
            let wait = match self.relay_once().await {
                Ok(n) if n as u64 >= self.settings.batch_size => {
                    backoff = min;
                    continue;
                }
                Ok(_) => {
                    backoff = min;
                    poll
                }
                Err(e) => {
                    tracing::warn!(error = %e, retry_in = ?backoff, "outbox relay could not publish");
                    metrics::counter!("conveyor_outbox_publish_failures_total").increment(1);
                    let w = backoff;
                    backoff = (backoff * 2).min(max);
                    w
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => break,
                // Let neighbouring commits land: one round publishes them together.
                _ = self.wake.notified() => tokio::time::sleep(linger).await,
                _ = tokio::time::sleep(wait) => {}
            }
        }
        if let Err(e) = self.relay_once().await {
            tracing::warn!(error = %e, "outbox rows left unpublished at shutdown; the next start sends them");
        }
    }

    /// Publishes one batch of pending rows; returns how many went out.
    pub async fn relay_once(&self) -> anyhow::Result<usize> {
        if self.db.get_database_backend() == DatabaseBackend::Postgres {
            return self.relay_marking_first().await;
        }
        if crate::db::supports_skip_locked(&self.db) {
            // READ COMMITTED: a locking read re-checks `published_at IS NULL` on the latest
            // row version, so a row another relay just published is not selected again
            // (under MariaDB's REPEATABLE READ it was: seen in tests).
            let txn = crate::db::begin_read_committed(&self.db).await?;
            let rows = pending(self.settings.batch_size)
                .lock_with_behavior(LockType::Update, LockBehavior::SkipLocked)
                .all(&txn)
                .await?;
            let (ids, out) = self.outgoing(rows);
            let published = self.publish(&out).await;
            match &published {
                Ok(()) => mark_sent(&txn, ids).await?,
                Err(e) => record_failure(&txn, ids, e).await?,
            }
            // Commit either way: on failure it records the attempt on the rows.
            txn.commit().await?;
            Ok(published.map(|()| out.len())?)
        } else {
            let rows = pending(self.settings.batch_size).all(&self.db).await?;
            let (ids, out) = self.outgoing(rows);
            let published = self.publish(&out).await;
            match &published {
                Ok(()) => mark_sent(&self.db, ids).await?,
                Err(e) => record_failure(&self.db, ids, e).await?,
            }
            Ok(published.map(|()| out.len())?)
        }
    }

    /// PostgreSQL: the round's rows are taken and marked sent by one statement
    /// (`UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED) RETURNING`), published,
    /// and the mark committed only once the broker confirmed them; a failed publish rolls
    /// the mark back and records the attempt. A locking read followed by an update wrote
    /// every row twice (the lock is a write of the row on PostgreSQL): two heap writes and
    /// WAL records per message, on every task's path.
    async fn relay_marking_first(&self) -> anyhow::Result<usize> {
        let txn = crate::db::begin_read_committed(&self.db).await?;
        let take = pending(self.settings.batch_size)
            .select_only()
            .column(Column::Id)
            .lock_with_behavior(LockType::Update, LockBehavior::SkipLocked)
            .into_query();
        let mut rows = entity::Entity::update_many()
            .col_expr(Column::PublishedAt, Expr::value(Utc::now()))
            .filter(Column::Id.in_subquery(take))
            .exec_with_returning(&txn)
            .await?;
        if rows.is_empty() {
            txn.rollback().await?;
            return Ok(0);
        }
        // RETURNING does not keep the subquery's order; publishing does.
        rows.sort_unstable_by_key(|r| r.id);
        let taken: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let (ids, out) = self.outgoing(rows);
        match self.publish(&out).await {
            Ok(()) => {
                // A row for a target this build does not know stays pending.
                if ids.len() < taken.len() {
                    let unknown: Vec<i64> =
                        taken.into_iter().filter(|id| !ids.contains(id)).collect();
                    entity::Entity::update_many()
                        .col_expr(
                            Column::PublishedAt,
                            Expr::value(Option::<chrono::DateTime<Utc>>::None),
                        )
                        .filter(Column::Id.is_in(unknown))
                        .exec(&txn)
                        .await?;
                }
                txn.commit().await?;
                Ok(out.len())
            }
            Err(e) => {
                txn.rollback().await?;
                record_failure(&self.db, ids, &e).await?;
                Err(e.into())
            }
        }
    }

    /// The rows as messages, with their ids; a row naming a target this build does not
    /// know is left out (and left pending).
    fn outgoing(&self, rows: Vec<entity::Model>) -> (Vec<i64>, Vec<Outgoing>) {
        let mut ids = Vec::with_capacity(rows.len());
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let Some(target) = self.broker.topology().target(&row.queue) else {
                // A row for a target this build does not know (older/newer version):
                // leave it for a process that does, and say so.
                tracing::error!(id = row.id, queue = %row.queue, "outbox row names an unknown target");
                continue;
            };
            ids.push(row.id);
            out.push(Outgoing {
                target,
                message_id: row.message_id,
                body: row.body.into_bytes(),
                traceparent: row.traceparent,
            });
        }
        (ids, out)
    }

    /// Publishes `out` with confirms and counts what went out.
    async fn publish(&self, out: &[Outgoing]) -> Result<(), BrokerError> {
        if out.is_empty() {
            return Ok(());
        }
        self.broker.publish_batch(out).await?;
        metrics::counter!("conveyor_outbox_published_total").increment(out.len() as u64);
        // One counter update per target, not per message (a batch has a few targets).
        let mut per_target: Vec<(Target, u64)> = Vec::new();
        for m in out {
            match per_target.iter_mut().find(|(t, _)| *t == m.target) {
                Some((_, n)) => *n += 1,
                None => per_target.push((m.target, 1)),
            }
        }
        for (target, n) in per_target {
            if let Target::Queue(q) = target {
                self.tally.add(q.key, What::Published, n);
            }
            metrics::counter!("conveyor_messages_published_total", "queue" => target.key())
                .increment(n);
        }
        Ok(())
    }

    /// Rows committed but not yet published, and when the oldest was committed.
    pub async fn lag(&self) -> Result<Lag, sea_orm::DbErr> {
        use sea_orm::PaginatorTrait as _;
        Ok(Lag {
            pending: entity::Entity::find()
                .filter(Column::PublishedAt.is_null())
                .count(&self.db)
                .await?,
            oldest: pending(1).one(&self.db).await?.map(|row| row.created_at),
        })
    }
}

/// What the relay has yet to publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lag {
    pub pending: u64,
    pub oldest: Option<chrono::DateTime<Utc>>,
}

async fn mark_sent(conn: &impl ConnectionTrait, ids: Vec<i64>) -> Result<(), sea_orm::DbErr> {
    if ids.is_empty() {
        return Ok(());
    }
    entity::Entity::update_many()
        .col_expr(Column::PublishedAt, Expr::value(Utc::now()))
        .filter(Column::Id.is_in(ids))
        .exec(conn)
        .await
        .map(|_| ())
}

async fn record_failure(
    conn: &impl ConnectionTrait,
    ids: Vec<i64>,
    e: &BrokerError,
) -> Result<(), sea_orm::DbErr> {
    entity::Entity::update_many()
        .col_expr(Column::Attempts, Expr::col(Column::Attempts).add(1))
        .col_expr(Column::LastError, Expr::value(e.to_string()))
        .filter(Column::Id.is_in(ids))
        .exec(conn)
        .await
        .map(|_| ())
}

fn pending(limit: u64) -> sea_orm::Select<entity::Entity> {
    entity::Entity::find()
        .filter(Column::PublishedAt.is_null())
        .order_by_asc(Column::Id)
        .limit(limit)
}
