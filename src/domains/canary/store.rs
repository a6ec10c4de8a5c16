//! The canary's rows: a ping sent (row and outbox message in one transaction; on a
//! tenant's behalf, its `canary.ping` event too), a ping received (stamped once), what
//! the route and the gauges read, and the trim.

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait as _, DatabaseConnection, DatabaseTransaction, DbErr,
    EntityTrait as _, PaginatorTrait as _, QueryFilter as _, QueryOrder as _, QuerySelect as _,
    TransactionTrait as _,
};

use super::entity::{ActiveModel, Column, Entity, Model};
use super::events::PING;
use super::messages::Ping;
use super::queues::CANARY_PING;
use crate::broker::Target;
use crate::events::{Event, Events};
use crate::outbox::{self, OutboxError};

/// Records a ping and its message in one transaction; the relay publishes it.
pub async fn send(db: &DatabaseConnection, max_payload: usize) -> Result<Ping, OutboxError> {
    let txn = db.begin().await?;
    let ping = send_in(&txn, max_payload).await?;
    txn.commit().await?;
    Ok(ping)
}

/// [`send`] on `user_id`'s behalf: its `canary.ping` event is recorded through `events`
/// in the same transaction (their webhook endpoints that want it get it).
pub async fn send_for(
    db: &DatabaseConnection,
    events: &Events,
    user_id: &str,
    max_payload: usize,
) -> Result<Ping, OutboxError> {
    let txn = db.begin().await?;
    let ping = send_in(&txn, max_payload).await?;
    let data = serde_json::json!({ "ping_id": ping.ping_id, "sent_at": ping.sent_at });
    let event = Event::new(user_id, &PING, data);
    events
        .record(&txn, vec![event])
        .await
        .map_err(DbErr::from)?;
    txn.commit().await?;
    Ok(ping)
}

async fn send_in(txn: &DatabaseTransaction, max_payload: usize) -> Result<Ping, OutboxError> {
    let ping = Ping {
        ping_id: uuid::Uuid::now_v7().to_string(),
        sent_at: Utc::now(),
    };
    Entity::insert(ActiveModel {
        id: Set(ping.ping_id.clone()),
        sent_at: Set(ping.sent_at),
        received_at: Set(None),
        latency_ms: Set(None),
    })
    .exec(txn)
    .await?;
    outbox::enqueue(
        txn,
        Target::Queue(&CANARY_PING),
        &ping.envelope(),
        max_payload,
    )
    .await?;
    Ok(ping)
}

/// What receiving a ping did.
#[derive(Debug, PartialEq, Eq)]
pub enum Received {
    /// First time: its latency in milliseconds.
    Stamped(i64),
    /// Stamped before (a redelivery), or its row was trimmed: nothing to do.
    Already,
}

/// Stamps the ping's row once (a conditional update: a redelivery changes nothing).
pub async fn receive(
    db: &DatabaseConnection,
    ping: &Ping,
    now: DateTime<Utc>,
) -> Result<Received, DbErr> {
    let latency = (now - ping.sent_at).num_milliseconds().max(0);
    let updated = Entity::update_many()
        .col_expr(Column::ReceivedAt, Expr::value(now))
        .col_expr(Column::LatencyMs, Expr::value(latency))
        .filter(Column::Id.eq(ping.ping_id.as_str()))
        .filter(Column::ReceivedAt.is_null())
        .exec(db)
        .await?;
    Ok(if updated.rows_affected == 1 {
        Received::Stamped(latency)
    } else {
        Received::Already
    })
}

/// The newest `limit` pings, newest first.
pub async fn recent(db: &DatabaseConnection, limit: u64) -> Result<Vec<Model>, DbErr> {
    Entity::find()
        .order_by_desc(Column::SentAt)
        .order_by_desc(Column::Id)
        .limit(limit)
        .all(db)
        .await
}

/// The newest ping that came back, and how many sent before `overdue` have not.
pub async fn health(
    db: &DatabaseConnection,
    overdue: DateTime<Utc>,
) -> Result<(Option<Model>, u64), DbErr> {
    let last = Entity::find()
        .filter(Column::ReceivedAt.is_not_null())
        .order_by_desc(Column::SentAt)
        .one(db)
        .await?;
    let missing = Entity::find()
        .filter(Column::ReceivedAt.is_null())
        .filter(Column::SentAt.lt(overdue))
        .count(db)
        .await?;
    Ok((last, missing))
}

/// When the oldest ping still on its way was sent.
pub async fn oldest_waiting(db: &DatabaseConnection) -> Result<Option<DateTime<Utc>>, DbErr> {
    Ok(Entity::find()
        .filter(Column::ReceivedAt.is_null())
        .order_by_asc(Column::SentAt)
        .one(db)
        .await?
        .map(|m| m.sent_at))
}

/// Housekeeping: pings sent before `cutoff` go.
pub fn trim(db: &DatabaseConnection, cutoff: DateTime<Utc>) -> BoxFuture<'_, Result<u64, DbErr>> {
    Box::pin(async move {
        let gone = Entity::delete_many()
            .filter(Column::SentAt.lt(cutoff))
            .exec(db)
            .await?;
        Ok(gone.rows_affected)
    })
}
