//! The inbox: verified provider events recorded with their `payments.apply` message (one
//! transaction; a redelivered event is recognised by its unique key), and what is still
//! waiting to be applied.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbErr,
    EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, SqlErr,
};

use super::{EventStatus, Kind};
use crate::domains::payments::entity::event;
use crate::domains::payments::messages::ApplyMessage;
use crate::outbox::{self, OutboxError};

/// A verified event to record.
#[derive(Debug, Clone)]
pub struct Incoming {
    pub provider: &'static str,
    pub event_id: String,
    pub payment_id: String,
    pub kind: Kind,
}

/// Records a verified event and its `payments.apply` message in one transaction; `false`
/// when this provider's event id is recorded already (a redelivery: nothing to do).
pub async fn record(
    db: &DatabaseConnection,
    incoming: &Incoming,
    max_bytes: usize,
) -> Result<bool, OutboxError> {
    let txn = crate::db::begin_read_committed(db).await?;
    let Some(row) = receive(
        &txn,
        incoming.provider,
        &incoming.event_id,
        &incoming.payment_id,
        incoming.kind,
    )
    .await?
    else {
        txn.rollback().await?;
        return Ok(false);
    };
    enqueue_apply(&txn, &[(row, incoming.payment_id.clone())], max_bytes).await?;
    txn.commit().await?;
    Ok(true)
}

/// [`record`] for a batch, in the caller's transaction, in a fixed number of statements:
/// per event, whether it is new. The first of several equal events in the batch is the
/// new one. A concurrent writer recording one of them between the look-up and the insert
/// fails the batch on the unique key (then the group commit records them one by one).
pub async fn record_many(
    txn: &impl ConnectionTrait,
    batch: &[Incoming],
    max_bytes: usize,
) -> Result<Vec<bool>, OutboxError> {
    // Per provider, `provider = p AND event_id IN (…)`: the unique index leads with the
    // provider, so the look-up is an index scan however large the inbox grows.
    let mut by_provider: HashMap<&str, Vec<&str>> = HashMap::new();
    for i in batch {
        by_provider.entry(i.provider).or_default().push(&i.event_id);
    }
    let matches = || {
        by_provider
            .iter()
            .fold(Condition::any(), |any, (provider, ids)| {
                any.add(
                    Condition::all()
                        .add(event::Column::Provider.eq(*provider))
                        .add(event::Column::EventId.is_in(ids.iter().copied())),
                )
            })
    };
    let known = |rows: Vec<(i64, String, String)>| -> HashMap<(String, String), i64> {
        rows.into_iter().map(|(id, p, e)| ((p, e), id)).collect()
    };
    let lookup = || {
        event::Entity::find()
            .select_only()
            .columns([
                event::Column::Id,
                event::Column::Provider,
                event::Column::EventId,
            ])
            .filter(matches())
            .into_tuple::<(i64, String, String)>()
    };
    let existing = known(lookup().all(txn).await?);
    let mut seen = HashSet::new();
    let fresh: Vec<bool> = batch
        .iter()
        .map(|i| {
            let key = (i.provider.to_owned(), i.event_id.clone());
            !existing.contains_key(&key) && seen.insert(key)
        })
        .collect();
    let now = Utc::now();
    let rows: Vec<event::ActiveModel> = batch
        .iter()
        .zip(&fresh)
        .filter(|(_, new)| **new)
        .map(|(i, _)| new_row(i.provider, &i.event_id, &i.payment_id, i.kind, now))
        .collect();
    if rows.is_empty() {
        return Ok(fresh);
    }
    event::Entity::insert_many(rows)
        .exec_without_returning(txn)
        .await?;
    let ids = known(lookup().all(txn).await?);
    let applies: Vec<(i64, String)> = batch
        .iter()
        .zip(&fresh)
        .filter(|(_, new)| **new)
        .filter_map(|(i, _)| {
            ids.get(&(i.provider.to_owned(), i.event_id.clone()))
                .map(|id| (*id, i.payment_id.clone()))
        })
        .collect();
    enqueue_apply(txn, &applies, max_bytes).await?;
    Ok(fresh)
}

/// One `payments.apply` message per (inbox row, payment).
pub(super) async fn enqueue_apply(
    txn: &impl ConnectionTrait,
    rows: &[(i64, String)],
    max_bytes: usize,
) -> Result<(), OutboxError> {
    let messages: Vec<_> = rows
        .iter()
        .map(|(row, payment_id)| ApplyMessage { event: *row }.outgoing(payment_id))
        .collect();
    outbox::enqueue_many(txn, &messages, max_bytes).await
}

fn new_row(
    provider: &str,
    event_id: &str,
    payment_id: &str,
    kind: Kind,
    now: DateTime<Utc>,
) -> event::ActiveModel {
    event::ActiveModel {
        provider: Set(provider.to_owned()),
        event_id: Set(event_id.to_owned()),
        payment_id: Set(payment_id.to_owned()),
        kind: Set(kind.as_str().to_owned()),
        status: Set(EventStatus::Received),
        received_at: Set(now),
        applied_at: Set(None),
        amount: Set(match kind {
            Kind::Paid => 0,
            Kind::Refund(amount) | Kind::RefundTotal(amount) => amount,
        }),
        note: Set(None),
        ..Default::default()
    }
}

/// Records a verified event in the caller's transaction; `None` when this provider's
/// event id is recorded already.
pub async fn receive(
    txn: &impl ConnectionTrait,
    provider: &str,
    event_id: &str,
    payment_id: &str,
    kind: Kind,
) -> Result<Option<i64>, DbErr> {
    let row = new_row(provider, event_id, payment_id, kind, Utc::now());
    match event::Entity::insert(row).exec(txn).await {
        Ok(done) => Ok(Some(done.last_insert_id)),
        Err(e) if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Events recorded but not applied, oldest first, received before `before` (the
/// broker-down fallback's work).
pub async fn unapplied(
    db: &DatabaseConnection,
    before: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<i64>, DbErr> {
    event::Entity::find()
        .select_only()
        .column(event::Column::Id)
        .filter(event::Column::Status.eq(EventStatus::Received))
        .filter(event::Column::ReceivedAt.lt(before))
        .order_by_asc(event::Column::Id)
        .limit(limit)
        .into_tuple()
        .all(db)
        .await
}

/// The inbox's backlog: events not applied (received or waiting), and the oldest one's
/// arrival.
pub async fn backlog(db: &DatabaseConnection) -> Result<(u64, Option<DateTime<Utc>>), DbErr> {
    let pending = event::Entity::find()
        .filter(event::Column::Status.is_in([EventStatus::Received, EventStatus::Waiting]));
    let count = pending.clone().count(db).await?;
    let oldest: Option<DateTime<Utc>> = pending
        .select_only()
        .column(event::Column::ReceivedAt)
        .order_by_asc(event::Column::ReceivedAt)
        .into_tuple()
        .one(db)
        .await?;
    Ok((count, oldest))
}
