//! The queries of the payments flow. An event is applied by one conditional transition
//! of its inbox row (`RECEIVED → APPLIED`) in the same transaction as its effect, so
//! whoever applies it — the consumer, a redelivery, the broker-down fallback — applies it
//! once. Every apply then locks its payment's row, so a payment's events are applied one
//! at a time: the payment's own `CREATED → PAID` transition makes a second paid event
//! grant nothing, and a refund that arrives before its payment waits (`WAITING`) until the
//! paid event, which puts it back in line in its own transaction.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, LockType};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbErr,
    EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, SqlErr,
};
use serde_json::json;

use super::entity::{event, payment};
use super::queues::APPLY_EVENT;
use super::queues::PAYMENTS_APPLY;
use crate::broker::{Envelope, Target};
use crate::domains::flash_sale::messages::OrderEvent;
use crate::domains::flash_sale::store::{self as orders, Paid};
use crate::outbox::{self, OutboxError};
use crate::users::{credits, membership};

pub use event::Model as Event;
pub use payment::Model as Payment;

pub const CREATED: &str = "CREATED";
/// A CREATED intent nobody paid within `payments.intent_ttl_secs`: no longer counted as
/// open. A payment that still arrives for it is granted as for CREATED (the money came).
pub const EXPIRED: &str = "EXPIRED";
pub const PAID: &str = "PAID";
pub const REFUNDED: &str = "REFUNDED";
/// Money received for a flash-sale order that was canceled first (or paid by another
/// payment): nothing was delivered, the money goes back.
pub const REFUND_DUE: &str = "REFUND_DUE";
/// The inbox's event id column is this long.
pub const MAX_EVENT_ID: usize = 128;
const RECEIVED: &str = "RECEIVED";
const WAITING: &str = "WAITING";
const APPLIED: &str = "APPLIED";

/// What a provider event says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Paid,
    /// A refund of this many minor units.
    Refund(i64),
    /// A refund notice that carries the total refunded so far (Alipay's `refund_fee`):
    /// refunds up to that total, so notices applied in any order, or twice, give back
    /// exactly the total.
    RefundTotal(i64),
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Paid => "paid",
            Kind::Refund(_) => "refund",
            Kind::RefundTotal(_) => "refund_total",
        }
    }
}

/// What a new payment buys.
#[derive(Debug, Clone)]
pub struct NewPayment {
    /// A product of `[payments.products]`, or `order` for a flash-sale order.
    pub product: String,
    pub credits: i64,
    pub membership_months: i32,
    pub order_id: Option<String>,
    pub amount: i64,
    pub currency: String,
}

pub async fn create(
    db: &DatabaseConnection,
    user_id: &str,
    new: NewPayment,
) -> Result<Payment, DbErr> {
    let p = payment::Model {
        id: uuid::Uuid::now_v7().to_string(),
        user_id: user_id.to_owned(),
        product: new.product,
        credits: new.credits,
        amount: new.amount,
        currency: new.currency,
        status: CREATED.to_owned(),
        created_at: Utc::now(),
        paid_at: None,
        order_id: new.order_id,
        membership_months: new.membership_months,
        refunded_amount: 0,
        refunded_credits: 0,
        shortfall: 0,
    };
    payment::Entity::insert(payment::ActiveModel::from(p.clone()))
        .exec_without_returning(db)
        .await?;
    Ok(p)
}

/// The user's unpaid (CREATED) intents.
pub async fn count_open(db: &DatabaseConnection, user_id: &str) -> Result<u64, DbErr> {
    payment::Entity::find()
        .filter(payment::Column::UserId.eq(user_id))
        .filter(payment::Column::Status.eq(CREATED))
        .count(db)
        .await
}

/// CREATED intents created before `before` become EXPIRED; how many did.
pub async fn expire_unpaid(db: &DatabaseConnection, before: DateTime<Utc>) -> Result<u64, DbErr> {
    let done = payment::Entity::update_many()
        .col_expr(payment::Column::Status, Expr::value(EXPIRED))
        .filter(payment::Column::Status.eq(CREATED))
        .filter(payment::Column::CreatedAt.lt(before))
        .exec(db)
        .await?;
    Ok(done.rows_affected)
}

pub async fn get(db: &impl ConnectionTrait, id: &str) -> Result<Option<Payment>, DbErr> {
    payment::Entity::find_by_id(id.to_owned()).one(db).await
}

/// A payment's events, in the order they arrived.
pub async fn events_of(db: &DatabaseConnection, payment_id: &str) -> Result<Vec<Event>, DbErr> {
    event::Entity::find()
        .filter(event::Column::PaymentId.eq(payment_id))
        .order_by_asc(event::Column::Id)
        .all(db)
        .await
}

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
async fn enqueue_apply(
    txn: &impl ConnectionTrait,
    rows: &[(i64, String)],
    max_bytes: usize,
) -> Result<(), OutboxError> {
    let messages: Vec<_> = rows
        .iter()
        .map(|(row, payment_id)| {
            let apply = Envelope::new(APPLY_EVENT, json!({ "event": row }))
                .with_correlation_id(payment_id.clone());
            (Target::Queue(&PAYMENTS_APPLY), apply)
        })
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
        status: Set(RECEIVED.to_owned()),
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

/// What applying an event did.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// The payment turned PAID: its credits and membership were granted, its order (if
    /// any) turned PAID (that order event is published after the commit).
    Granted {
        user_id: String,
        credits: i64,
        membership_until: Option<DateTime<Utc>>,
        order_event: Option<OrderEvent>,
    },
    /// The payment turned REFUND_DUE: its order had been canceled (or paid by another
    /// payment); nothing was delivered.
    RefundDue {
        order_id: String,
    },
    /// The event was applied now, but the payment was paid before (another event).
    AlreadyPaid,
    /// A refund: `credits` taken back; `shortfall` credits had been spent already (recorded
    /// on the payment, alerted).
    Refunded {
        user_id: String,
        credits: i64,
        shortfall: i64,
    },
    /// A refund for a payment not applied yet: it waits for the paid event.
    Waiting,
    /// A refund for a payment refunded in full already.
    NothingLeft,
    /// Applied before: nothing done.
    Before,
    NoSuchEvent,
}

/// Applies inbox row `id` once, in one transaction with its effect.
pub async fn apply(
    db: &DatabaseConnection,
    id: i64,
    max_bytes: usize,
) -> Result<Applied, OutboxError> {
    let txn = crate::db::begin_read_committed(db).await?;
    let now = Utc::now();
    let moved = event::Entity::update_many()
        .col_expr(event::Column::Status, Expr::value(APPLIED))
        .col_expr(event::Column::AppliedAt, Expr::value(now))
        .filter(event::Column::Id.eq(id))
        .filter(event::Column::Status.eq(RECEIVED))
        .exec(&txn)
        .await?;
    if moved.rows_affected != 1 {
        txn.rollback().await?;
        let exists = event::Entity::find_by_id(id).one(db).await?.is_some();
        return Ok(if exists {
            Applied::Before
        } else {
            Applied::NoSuchEvent
        });
    }
    let ev = event::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(id.to_string()))?;
    // One event of a payment at a time (see the module doc).
    let p = payment::Entity::find_by_id(ev.payment_id.clone())
        .lock(LockType::Update)
        .one(&txn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(ev.payment_id.clone()))?;
    let (outcome, note) = match ev.kind.as_str() {
        "refund" | "refund_total" => refund(&txn, &ev, &p).await?,
        _ => pay(&txn, &p, max_bytes).await?,
    };
    if let Some(note) = note {
        event::Entity::update_many()
            .col_expr(event::Column::Note, Expr::value(note))
            .filter(event::Column::Id.eq(id))
            .exec(&txn)
            .await?;
    }
    txn.commit().await?;
    Ok(outcome)
}

/// A paid event for a payment (row locked): CREATED → PAID (or REFUND_DUE) with its
/// effects, and its waiting refunds put back in line.
async fn pay(
    txn: &impl ConnectionTrait,
    p: &Payment,
    max_bytes: usize,
) -> Result<(Applied, Option<String>), OutboxError> {
    if p.status != CREATED && p.status != EXPIRED {
        return Ok((
            Applied::AlreadyPaid,
            Some(format!("payment was {} already", p.status)),
        ));
    }
    let mut order_event = None;
    if let Some(order_id) = &p.order_id {
        match orders::pay(txn, order_id, &p.id).await? {
            Some(Paid::Now(_, ev)) => order_event = Some(ev),
            // An operator marked it paid by hand with this payment's reference first.
            Some(Paid::Already(o)) if o.payment_ref.as_deref() == Some(p.id.as_str()) => {}
            Some(Paid::Already(_) | Paid::AfterCancel(_)) | None => {
                set_status(txn, &p.id, REFUND_DUE).await?;
                requeue_waiting(txn, &p.id, max_bytes).await?;
                let note = "the order was canceled or paid otherwise: refund due";
                return Ok((
                    Applied::RefundDue {
                        order_id: order_id.clone(),
                    },
                    Some(note.into()),
                ));
            }
        }
    }
    // The user's row first: booking a ledger row takes a shared lock on it (the foreign
    // key), and two payments of one user applied at once would each hold that and wait
    // for the other's exclusive lock.
    let user = crate::users::lock(txn, &p.user_id).await?;
    if p.credits > 0 {
        credits::grant(txn, &p.user_id, p.credits, &format!("payment:{}", p.id)).await?;
    }
    let mut membership_until = None;
    if p.membership_months > 0 {
        let months = u32::try_from(p.membership_months).unwrap_or(0);
        let key = format!("membership:{}", p.id);
        membership_until = Some(membership::extend(txn, &user, months, &key).await?);
    }
    set_status(txn, &p.id, PAID).await?;
    requeue_waiting(txn, &p.id, max_bytes).await?;
    Ok((
        Applied::Granted {
            user_id: p.user_id.clone(),
            credits: p.credits,
            membership_until,
            order_event,
        },
        None,
    ))
}

async fn set_status(txn: &impl ConnectionTrait, id: &str, status: &str) -> Result<(), DbErr> {
    payment::Entity::update_many()
        .col_expr(payment::Column::Status, Expr::value(status))
        .col_expr(payment::Column::PaidAt, Expr::value(Utc::now()))
        .filter(payment::Column::Id.eq(id))
        .exec(txn)
        .await
        .map(|_| ())
}

/// Refunds that arrived before their payment go back in line, in this transaction.
async fn requeue_waiting(
    txn: &impl ConnectionTrait,
    payment_id: &str,
    max_bytes: usize,
) -> Result<(), OutboxError> {
    let waiting: Vec<i64> = event::Entity::find()
        .select_only()
        .column(event::Column::Id)
        .filter(event::Column::PaymentId.eq(payment_id))
        .filter(event::Column::Status.eq(WAITING))
        .into_tuple()
        .all(txn)
        .await?;
    if waiting.is_empty() {
        return Ok(());
    }
    event::Entity::update_many()
        .col_expr(event::Column::Status, Expr::value(RECEIVED))
        .col_expr(event::Column::Note, Expr::value(Option::<String>::None))
        .col_expr(
            event::Column::AppliedAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .filter(event::Column::Id.is_in(waiting.iter().copied()))
        .exec(txn)
        .await?;
    let rows: Vec<(i64, String)> = waiting
        .into_iter()
        .map(|id| (id, payment_id.to_owned()))
        .collect();
    enqueue_apply(txn, &rows, max_bytes).await
}

/// A refund event for a payment (row locked).
async fn refund(
    txn: &impl ConnectionTrait,
    ev: &Event,
    p: &Payment,
) -> Result<(Applied, Option<String>), DbErr> {
    if p.status == CREATED || p.status == EXPIRED {
        // Before its payment: wait for it instead of being lost or applied first.
        event::Entity::update_many()
            .col_expr(event::Column::Status, Expr::value(WAITING))
            .col_expr(
                event::Column::AppliedAt,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(event::Column::Id.eq(ev.id))
            .exec(txn)
            .await?;
        return Ok((Applied::Waiting, Some("waiting for its payment".into())));
    }
    let asked = if ev.kind == "refund_total" {
        ev.amount - p.refunded_amount
    } else {
        ev.amount
    };
    let amount = asked.min(p.amount - p.refunded_amount).max(0);
    if amount == 0 {
        let note = format!(
            "nothing left to refund ({} refunded already)",
            p.refunded_amount
        );
        return Ok((Applied::NothingLeft, Some(note)));
    }
    let refunded = p.refunded_amount + amount;
    let full = refunded == p.amount;
    let mut taken = 0;
    let mut owed = 0;
    if p.status == PAID {
        // Credits back in proportion, rounded down until the last refund takes the rest.
        owed = if full {
            p.credits - p.refunded_credits
        } else {
            p.credits * refunded / p.amount - p.refunded_credits
        };
        if owed > 0 {
            let key = format!("payment-refund:{}", ev.id);
            taken = credits::take_back(txn, &p.user_id, owed, &key).await?;
        }
        if full && p.membership_months > 0 {
            let months = u32::try_from(p.membership_months).unwrap_or(0);
            let key = format!("membership-refund:{}", p.id);
            membership::revoke(txn, &p.user_id, months, &key).await?;
        }
    }
    let short = owed - taken;
    let mut update = payment::Entity::update_many()
        .col_expr(payment::Column::RefundedAmount, Expr::value(refunded))
        .col_expr(
            payment::Column::RefundedCredits,
            Expr::value(p.refunded_credits + owed),
        )
        .col_expr(payment::Column::Shortfall, Expr::value(p.shortfall + short))
        .filter(payment::Column::Id.eq(p.id.as_str()));
    if full {
        update = update.col_expr(payment::Column::Status, Expr::value(REFUNDED));
    }
    update.exec(txn).await?;
    let note = (short > 0).then(|| format!("{short} credits were spent already (shortfall)"));
    Ok((
        Applied::Refunded {
            user_id: p.user_id.clone(),
            credits: taken,
            shortfall: short,
        },
        note,
    ))
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
        .filter(event::Column::Status.eq(RECEIVED))
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
    let pending = event::Entity::find().filter(event::Column::Status.is_in([RECEIVED, WAITING]));
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
