//! Applying events: each read and locked with its lot in one statement, applied only
//! from `RECEIVED`, its transition in the same transaction as its effect, under its
//! payment's row lock (see the module doc of [`super`]). An event whose payment was paid
//! already costs two statements (its payment, its transition) and its share of the lot's
//! read; before, four.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, LockType};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
};

use super::inbox::enqueue_apply;
use super::{Event, EventStatus, Payment, PaymentStatus};
use crate::db::StoredName as _;
use crate::domains::flash_sale::messages::OrderEvent;
use crate::domains::flash_sale::store::{self as orders, Paid};
use crate::domains::payments::entity::{event, payment};
use crate::domains::payments::notify::Notify;
use crate::outbox::OutboxError;
use crate::users::{credits, membership};

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
    notify: &Notify,
    id: i64,
    max_bytes: usize,
) -> Result<Applied, OutboxError> {
    let mut applied = apply_many(db, notify, &[id], max_bytes).await?;
    applied
        .pop()
        .ok_or_else(|| DbErr::RecordNotFound(id.to_string()).into())
}

/// Applies inbox rows `ids` once each, in one transaction with their effects: one commit
/// for the lot. Any failure fails the lot (nothing of it applied); the caller applies
/// them one by one then. The events are read and locked in one statement, in id order,
/// and applied in id order, so two batches lock events, payments and users in the same
/// order as far as ids follow them.
pub async fn apply_many(
    db: &DatabaseConnection,
    notify: &Notify,
    ids: &[i64],
    max_bytes: usize,
) -> Result<Vec<Applied>, OutboxError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&i| ids[i]);
    let txn = crate::db::begin_read_committed(db).await?;
    let mut events: HashMap<i64, Event> = event::Entity::find()
        .filter(event::Column::Id.is_in(ids.iter().copied()))
        .order_by_asc(event::Column::Id)
        .lock(LockType::Update)
        .all(&txn)
        .await?
        .into_iter()
        .map(|e| (e.id, e))
        .collect();
    let mut done = Vec::with_capacity(ids.len());
    for i in order {
        // `remove`: an id twice in the lot (a redelivery; id order puts it right after
        // the first) is applied once, then `Before`.
        let outcome = match events.remove(&ids[i]) {
            Some(ev) => apply_in(&txn, notify, &ev, max_bytes).await?,
            None if done.last().is_some_and(|(j, _)| ids[*j] == ids[i]) => Applied::Before,
            None => Applied::NoSuchEvent,
        };
        done.push((i, outcome));
    }
    txn.commit().await?;
    done.sort_by_key(|(i, _)| *i);
    Ok(done.into_iter().map(|(_, a)| a).collect())
}

/// Applies event `ev` (its row locked by the caller) in `txn`: its effect and its
/// transition out of `RECEIVED`, or `Before` if it left `RECEIVED` already.
async fn apply_in(
    txn: &impl ConnectionTrait,
    notify: &Notify,
    ev: &Event,
    max_bytes: usize,
) -> Result<Applied, OutboxError> {
    if ev.status != EventStatus::Received {
        return Ok(Applied::Before);
    }
    // One event of a payment at a time (see the module doc).
    let p = payment::Entity::find_by_id(ev.payment_id.clone())
        .lock(LockType::Update)
        .one(txn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(ev.payment_id.clone()))?;
    let (outcome, note) = match ev.kind.as_str() {
        "refund" | "refund_total" => refund(txn, ev, &p).await?,
        _ => pay(txn, notify, &p, max_bytes).await?,
    };
    // A refund before its payment waits for it (put back in line when it is paid).
    let (status, applied_at) = match outcome {
        Applied::Waiting => (EventStatus::Waiting, None),
        _ => (EventStatus::Applied, Some(Utc::now())),
    };
    let moved = event::Entity::update_many()
        .col_expr(event::Column::Status, Expr::value(status))
        .col_expr(event::Column::AppliedAt, Expr::value(applied_at))
        .col_expr(event::Column::Note, Expr::value(note))
        .filter(event::Column::Id.eq(ev.id))
        .filter(event::Column::Status.eq(EventStatus::Received))
        .exec(txn)
        .await?;
    if moved.rows_affected != 1 {
        // Its row is locked by this transaction: another writer is a bug, and the lot
        // fails rather than apply an effect twice.
        return Err(DbErr::Custom(format!("payment event {} moved while locked", ev.id)).into());
    }
    notify.applied(txn, &p.id, &outcome).await?;
    Ok(outcome)
}

/// A paid event for a payment (row locked): CREATED → PAID (or REFUND_DUE) with its
/// effects, and its waiting refunds put back in line.
async fn pay(
    txn: &impl ConnectionTrait,
    notify: &Notify,
    p: &Payment,
    max_bytes: usize,
) -> Result<(Applied, Option<String>), OutboxError> {
    if p.status != PaymentStatus::Created && p.status != PaymentStatus::Expired {
        return Ok((
            Applied::AlreadyPaid,
            Some(format!("payment was {} already", p.status.name())),
        ));
    }
    let mut order_event = None;
    if let Some(order_id) = &p.order_id {
        match orders::pay(txn, &notify.orders, order_id, &p.id).await? {
            Some(Paid::Now(_, ev)) => order_event = Some(ev),
            // An operator marked it paid by hand with this payment's reference first.
            Some(Paid::Already(o)) if o.payment_ref.as_deref() == Some(p.id.as_str()) => {}
            Some(Paid::Already(_) | Paid::AfterCancel(_)) | None => {
                set_status(txn, &p.id, PaymentStatus::RefundDue).await?;
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
        membership_until =
            Some(membership::extend(txn, &user, months, p.plan.as_deref(), &key).await?);
    }
    set_status(txn, &p.id, PaymentStatus::Paid).await?;
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

async fn set_status(
    txn: &impl ConnectionTrait,
    id: &str,
    status: PaymentStatus,
) -> Result<(), DbErr> {
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
        .filter(event::Column::Status.eq(EventStatus::Waiting))
        .into_tuple()
        .all(txn)
        .await?;
    if waiting.is_empty() {
        return Ok(());
    }
    event::Entity::update_many()
        .col_expr(event::Column::Status, Expr::value(EventStatus::Received))
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
    if p.status == PaymentStatus::Created || p.status == PaymentStatus::Expired {
        // Before its payment: wait for it instead of being lost or applied first (the
        // caller marks the event WAITING).
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
    if p.status == PaymentStatus::Paid {
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
        update = update.col_expr(
            payment::Column::Status,
            Expr::value(PaymentStatus::Refunded),
        );
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
