//! Steps that wait for a person: a pipeline step named in `[ai.kinds.<kind>]
//! approval_before` runs only once someone approves it. The step before commits the
//! task `WAITING` with an approval wait (no message, no worker); the owner or an admin
//! decides with `POST /v1/tasks/{id}/approval`, or whoever holds its one-time link with
//! `POST /v1/approvals/{token}`. Approving publishes the step (through the outbox);
//! rejecting, or no decision by `approval_timeout_secs`, cancels the task with the
//! cancel policy's refund (the steps not run come back). Each decision is one guarded
//! transition, so of two that race one wins and the other finds nothing to decide.

use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QuerySelect, TransactionTrait,
};

use super::store::waiting;
use crate::domains::ai_tasks::entity::task;
use crate::domains::ai_tasks::kinds::Status;
use crate::domains::ai_tasks::messages::TaskEvent;
use crate::domains::ai_tasks::store::waits::{Wait, forget};
use crate::domains::ai_tasks::store::{self, Change, StoreError, Task};
use crate::events::Events;

/// Approves the step `w` waits before: the task back to PROCESSING (no lease yet) with
/// the step's run message in the outbox, the wait gone, the decision audited. `None`
/// when there was nothing to decide any more.
pub async fn approve(
    db: &DatabaseConnection,
    events: &Events,
    w: &Wait,
    actor: &str,
    comment: Option<&str>,
    max_payload: usize,
) -> Result<Option<(Task, TaskEvent)>, StoreError> {
    let txn = db.begin().await?;
    let change = Change {
        status: Some(Status::Processing),
        message: Some(format!("approved by {actor}")),
        ..Default::default()
    };
    let Some((t, ev)) = store::apply(&txn, events, &w.task_id, &waiting(w), change).await? else {
        txn.rollback().await?;
        return Ok(None);
    };
    store::enqueue_step(&txn, &t, t.step_index, max_payload).await?;
    forget(&txn, &w.task_id).await?;
    audit(&txn, actor, "task.approve", &t, comment).await?;
    txn.commit().await?;
    Ok(Some((t, ev)))
}

/// Rejects the step `w` waits before (a person's no, or the timeout's): CANCELED with
/// `reason`, the cancel policy's refund (every step not run), the wait gone. The task,
/// its event and the refund; `None` when there was nothing to decide any more.
pub async fn reject(
    db: &DatabaseConnection,
    events: &Events,
    w: &Wait,
    reason: String,
    actor: &str,
    started_percent: u8,
) -> Result<Option<(Task, TaskEvent, i64)>, DbErr> {
    let txn = db.begin().await?;
    let Some(before) = task::Entity::find_by_id(w.task_id.clone())
        .lock(sea_orm::sea_query::LockType::Update)
        .one(&txn)
        .await?
    else {
        return Ok(None);
    };
    let change = Change {
        status: Some(Status::Canceled),
        error: Some(reason.clone()),
        message: Some(reason.clone()),
        ..Default::default()
    };
    let Some((t, ev)) = store::apply(&txn, events, &w.task_id, &waiting(w), change).await? else {
        txn.rollback().await?;
        return Ok(None);
    };
    let refund = store::cancel_refund(&before, started_percent, false);
    store::book_cancel(&txn, &t, refund).await?;
    forget(&txn, &w.task_id).await?;
    audit(&txn, actor, "task.reject", &t, Some(&reason)).await?;
    txn.commit().await?;
    crate::domains::ai_tasks::metrics::ended(&t, refund);
    Ok(Some((t, ev, refund)))
}

async fn audit(
    txn: &impl ConnectionTrait,
    actor: &str,
    action: &str,
    t: &Task,
    comment: Option<&str>,
) -> Result<(), DbErr> {
    crate::users::audit::record(
        txn,
        actor,
        action,
        &format!("task:{}", t.id),
        serde_json::json!({ "owner": t.user_id, "step": t.step_index, "comment": comment }),
    )
    .await
}
