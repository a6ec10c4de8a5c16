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
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
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
        if crate::db::supports_skip_locked(&self.db) {
            // READ COMMITTED: a locking read re-checks `published_at IS NULL` on the latest
            // row version, so a row another relay just published is not selected again
            // (under MariaDB's REPEATABLE READ it was: seen in tests).
            let txn = crate::db::begin_read_committed(&self.db).await?;
            let rows = pending(self.settings.batch_size)
                .lock_with_behavior(LockType::Update, LockBehavior::SkipLocked)
                .all(&txn)
                .await?;
            let published = self.publish_and_mark(&txn, rows).await?;
            // Commit either way: on failure it records the attempt on the rows.
            txn.commit().await?;
            Ok(published?)
        } else {
            let rows = pending(self.settings.batch_size).all(&self.db).await?;
            Ok(self.publish_and_mark(&self.db, rows).await??)
        }
    }

    /// Outer error: the database; inner: the broker (attempt recorded on the rows).
    async fn publish_and_mark(
        &self,
        conn: &impl ConnectionTrait,
        rows: Vec<entity::Model>,
    ) -> Result<Result<usize, BrokerError>, sea_orm::DbErr> {
        if rows.is_empty() {
            return Ok(Ok(0));
        }
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
        if out.is_empty() {
            return Ok(Ok(0));
        }
        if let Err(e) = self.broker.publish_batch(&out).await {
            entity::Entity::update_many()
                .col_expr(Column::Attempts, Expr::col(Column::Attempts).add(1))
                .col_expr(Column::LastError, Expr::value(e.to_string()))
                .filter(Column::Id.is_in(ids))
                .exec(conn)
                .await?;
            return Ok(Err(e));
        }
        entity::Entity::update_many()
            .col_expr(Column::PublishedAt, Expr::value(Utc::now()))
            .filter(Column::Id.is_in(ids))
            .exec(conn)
            .await?;
        metrics::counter!("conveyor_outbox_published_total").increment(out.len() as u64);
        // One counter update per target, not per message (a batch has a few targets).
        let mut per_target: Vec<(Target, u64)> = Vec::new();
        for m in &out {
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
        Ok(Ok(out.len()))
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

fn pending(limit: u64) -> sea_orm::Select<entity::Entity> {
    entity::Entity::find()
        .filter(Column::PublishedAt.is_null())
        .order_by_asc(Column::Id)
        .limit(limit)
}
