//! Credits at the end of a task (consumed, refunded) and the ways a task ends without
//! succeeding: a cancel (with its refund policy) or a failure.

#[allow(unused_imports)]
use super::*;
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QuerySelect, TransactionTrait,
};

use crate::broker::{Envelope, Target};
use crate::domains::ai_tasks::entity::task;
use crate::domains::ai_tasks::kinds::Status;
use crate::domains::ai_tasks::messages::TaskEvent;
use crate::domains::ai_tasks::messages::{CANCEL_JOB, CancelJob};
use crate::domains::ai_tasks::queues::AI_CHECK;
use crate::events::Events;
use crate::outbox;
use crate::users::credits;

/// Books the terminal credit effect of a transition (in its transaction): the
/// reservation is consumed on SUCCESS and refunded on FAILED or CANCELED. The ledger's
/// unique effect key makes a second booking fail instead of moving credits twice.
pub async fn settle_credits(txn: &impl ConnectionTrait, t: &Task) -> Result<(), DbErr> {
    if t.cost == 0 {
        return Ok(());
    }
    match t.status {
        Status::Success => credits::consume(txn, &t.user_id, &format!("consume:{}", t.id)).await,
        Status::Failed | Status::Canceled => {
            credits::refund(txn, &t.user_id, t.cost, &format!("refund:{}", t.id)).await
        }
        _ => Ok(()),
    }
}

/// What a task canceled in state `t` (read before the cancel) gets back: all of it if it
/// never started; else the share of its steps not started, plus `started_percent` of the
/// share of the step it was running. A step nobody holds a lease on (between pipeline
/// steps, waiting to retry, or waiting for an approval) counts as not started; a job
/// parked at its provider (`at_provider`) counts as running.
pub fn cancel_refund(t: &Task, started_percent: u8, at_provider: bool) -> i64 {
    if t.started_at.is_none() {
        return t.cost;
    }
    let steps = t.kind.steps().len().max(1) as i64;
    let at = i64::from(t.step_index).clamp(0, steps);
    let holding = t.status == Status::Processing && t.heartbeat_at.is_some();
    let running = (holding || (t.status == Status::Waiting && at_provider)) && at < steps;
    let not_started = steps - at - i64::from(running);
    let percent = if running {
        i64::from(started_percent)
    } else {
        0
    };
    let share = t.cost * (not_started * 100 + percent) / (steps * 100);
    share.clamp(0, t.cost)
}

/// Cancels a task that is PENDING, RETRYING or PROCESSING: CANCELED, the refund of the
/// cancel policy ([`cancel_refund`]; the rest is kept as consumed), and, when an admin
/// cancels someone else's task, an audit record, all in one transaction. The task, its
/// event and the refund; `None` if it had ended already.
pub async fn cancel(
    db: &DatabaseConnection,
    events: &Events,
    id: &str,
    started_percent: u8,
    admin: Option<&str>,
    max_payload: usize,
) -> Result<Option<(Task, TaskEvent, i64)>, DbErr> {
    let txn = db.begin().await?;
    // The state the refund is decided from, held until the commit: the cancel clears the
    // lease, and a consumer must not claim the next step in between.
    let Some(before) = task::Entity::find_by_id(id.to_owned())
        .lock(sea_orm::sea_query::LockType::Update)
        .one(&txn)
        .await?
    else {
        return Ok(None);
    };
    let guard = Guard::status(&Status::ACTIVE);
    let change = Change {
        status: Some(Status::Canceled),
        error: Some("canceled".into()),
        message: Some("canceled".into()),
        ..Default::default()
    };
    let Some((t, ev)) = apply(&txn, events, id, &guard, change).await? else {
        return Ok(None);
    };
    // A parked job is asked to stop (through the outbox: the provider's API is the
    // consumers' to call), and its wait goes with the task.
    let wait = waits::get(&txn, id).await?;
    let at_provider = wait
        .as_ref()
        .is_some_and(|w| w.waiting_for == crate::domains::ai_tasks::entity::wait::PROVIDER);
    if let Some(w) = &wait {
        waits::forget(&txn, id).await?;
        if let (true, Some(handle)) = (at_provider, &w.job) {
            let cancel = CancelJob {
                task_id: id.to_owned(),
                provider: w.provider.clone(),
                handle: handle.clone(),
            };
            let message = Envelope::new(
                CANCEL_JOB,
                serde_json::to_value(&cancel).unwrap_or_default(),
            )
            .with_correlation_id(id.to_owned());
            outbox::enqueue(&txn, Target::Queue(&AI_CHECK), &message, max_payload)
                .await
                .map_err(|e| DbErr::Custom(e.to_string()))?;
        }
    }
    let refund = cancel_refund(&before, started_percent, at_provider);
    book_cancel(&txn, &t, refund).await?;
    if let Some(actor) = admin {
        crate::users::audit::record(
            &txn,
            actor,
            "task.cancel",
            &format!("task:{}", t.id),
            serde_json::json!({ "owner": t.user_id, "cost": t.cost, "refunded": refund }),
        )
        .await?;
    }
    txn.commit().await?;
    crate::domains::ai_tasks::metrics::ended(&t, refund);
    Ok(Some((t, ev, refund)))
}

/// Books a canceled task's credits: `refund` back, the rest of its reservation kept as
/// consumed.
pub async fn book_cancel(txn: &impl ConnectionTrait, t: &Task, refund: i64) -> Result<(), DbErr> {
    if refund > 0 {
        credits::refund(txn, &t.user_id, refund, &format!("refund:{}", t.id)).await?;
    }
    if refund < t.cost {
        credits::consume(txn, &t.user_id, &format!("consume:{}", t.id)).await?;
    }
    Ok(())
}

/// Moves a task to a terminal failure state (FAILED or CANCELED) from `from`, refunding.
pub async fn finish_unsuccessfully(
    db: &DatabaseConnection,
    events: &Events,
    id: &str,
    guard: &Guard<'_>,
    status: Status,
    error: Option<String>,
) -> Result<Option<(Task, TaskEvent)>, DbErr> {
    let txn = db.begin().await?;
    let message = error.clone();
    let change = Change {
        status: Some(status),
        error,
        message,
        ..Default::default()
    };
    let Some((t, ev)) = apply(&txn, events, id, guard, change).await? else {
        return Ok(None);
    };
    settle_credits(&txn, &t).await?;
    txn.commit().await?;
    crate::domains::ai_tasks::metrics::finished(&t);
    Ok(Some((t, ev)))
}
