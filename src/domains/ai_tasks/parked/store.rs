//! The queries of waiting steps. A step parks with one transaction (the task `WAITING`,
//! its wait row, its first check through the outbox); every check after that is fenced
//! by the wait's check count, so at most one of two checks that raced re-parks it. The
//! rows as the task's own transitions touch them (read, removed with the step or the
//! task, an approval's started) are [`store::waits`].

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect, TransactionTrait,
};

use crate::broker::{Envelope, Target};
use crate::domains::ai_tasks::entity::wait::{self, PROVIDER};
use crate::domains::ai_tasks::kinds::Status;
use crate::domains::ai_tasks::messages::{CHECK_STEP, CheckStep, TaskEvent};
use crate::domains::ai_tasks::queues::check_delay;
use crate::domains::ai_tasks::store::waits::{Wait, forget};
use crate::domains::ai_tasks::store::{self, Change, Guard, StoreError, Task};
use crate::events::Events;
use crate::outbox;
use crate::providers::Parked;

/// The message that checks `task_id`'s wait after `checks` checks.
pub fn check_message(task_id: &str, attempt: i32, checks: i32) -> Envelope {
    let payload = serde_json::to_value(CheckStep {
        task_id: task_id.to_owned(),
        attempt,
        checks,
    })
    .unwrap_or_default();
    Envelope::new(CHECK_STEP, payload).with_correlation_id(task_id.to_owned())
}

/// The whole task's progress when its step `t.step_index` is at `percent`.
pub fn overall(t: &Task, percent: i32) -> i32 {
    let steps = t.kind.steps().len().max(1) as i32;
    (t.step_index * 100 + percent.clamp(0, 100)) / steps
}

/// The guard of a waiting task's own transitions (a check, a decision): still waiting,
/// at the claim and step of its wait.
pub(super) fn waiting(w: &Wait) -> Guard<'static> {
    Guard {
        statuses: &[Status::Waiting],
        attempt: Some(w.attempt),
        step_index: Some(w.step_index),
        lease_free_before: None,
    }
}

/// A step parked at its provider, as the claim that ran it commits it.
pub struct Park<'a> {
    pub task: &'a Task,
    pub parked: &'a Parked,
    /// The callback token's secret half.
    pub token: &'a str,
    /// When jobs of its provider have usually ended.
    pub expected_at: DateTime<Utc>,
    /// When the wait gives up (the kind's deadline from now).
    pub deadline_at: DateTime<Utc>,
    /// The first check's delay as the broker's topology has it (`[queues."ai.check.1"]`).
    pub first_delay: std::time::Duration,
}

/// Parks a claimed step in one transaction: the task `WAITING` (lease released), its
/// wait row, and the first check through the outbox. `None` when the claim no longer
/// holds the task (canceled meanwhile, re-driven).
pub async fn park(
    db: &DatabaseConnection,
    events: &Events,
    p: &Park<'_>,
    max_payload: usize,
) -> Result<Option<(Task, TaskEvent)>, StoreError> {
    let t = p.task;
    let txn = db.begin().await?;
    let change = Change {
        status: Some(Status::Waiting),
        release_lease: true,
        progress: p.parked.progress.map(|pct| overall(t, pct)),
        message: Some(format!(
            "waiting for {} (job {})",
            p.parked.provider, p.parked.handle
        )),
        ..Default::default()
    };
    let guard = Guard::holder(t.attempt).at_step(t.step_index);
    let Some((task, ev)) = store::apply(&txn, events, &t.id, &guard, change).await? else {
        return Ok(None);
    };
    let now = Utc::now();
    let first = check_delay(0);
    // A wait left by an earlier attempt (its task re-driven) gives way to this one.
    wait::Entity::delete_by_id(t.id.clone()).exec(&txn).await?;
    wait::Entity::insert(wait::ActiveModel {
        task_id: Set(t.id.clone()),
        attempt: Set(t.attempt),
        step_index: Set(t.step_index),
        waiting_for: Set(PROVIDER.into()),
        provider: Set(p.parked.provider.clone()),
        job: Set(Some(p.parked.handle.clone())),
        token: Set(p.token.to_owned()),
        checks: Set(0),
        parked_at: Set(now),
        check_at: Set(now + p.first_delay),
        expected_at: Set(p.expected_at),
        deadline_at: Set(p.deadline_at),
    })
    .exec_without_returning(&txn)
    .await?;
    outbox::enqueue(
        &txn,
        Target::Delay(first),
        &check_message(&t.id, t.attempt, 0),
        max_payload,
    )
    .await?;
    txn.commit().await?;
    Ok(Some((task, ev)))
}

/// Moves the wait past check `w.checks`, the next due at `next`: `false` when another
/// check got there first. With `progress` (the whole task's, changed), the task takes
/// it with its event in the same transaction.
pub async fn repark(
    db: &DatabaseConnection,
    events: &Events,
    w: &Wait,
    next: DateTime<Utc>,
    progress: Option<(i32, Option<String>)>,
) -> Result<Option<Option<TaskEvent>>, DbErr> {
    let txn = db.begin().await?;
    let moved = wait::Entity::update_many()
        .col_expr(wait::Column::Checks, Expr::value(w.checks + 1))
        .col_expr(wait::Column::CheckAt, Expr::value(next))
        .filter(wait::Column::TaskId.eq(w.task_id.clone()))
        .filter(wait::Column::Attempt.eq(w.attempt))
        .filter(wait::Column::Checks.eq(w.checks))
        .exec(&txn)
        .await?
        .rows_affected
        == 1;
    if !moved {
        txn.rollback().await?;
        return Ok(None);
    }
    let mut event = None;
    if let Some((percent, message)) = progress {
        let change = Change {
            progress: Some(percent),
            message,
            ..Default::default()
        };
        event = store::apply(&txn, events, &w.task_id, &waiting(w), change)
            .await?
            .map(|(_, ev)| ev);
    }
    txn.commit().await?;
    Ok(Some(event))
}

/// Ends a wait unsuccessfully: the task FAILED (or CANCELED) with `error`, its credits
/// refunded, the wait gone, in one transaction. `None` when the task was no longer
/// waiting on this claim.
pub async fn end(
    db: &DatabaseConnection,
    events: &Events,
    w: &Wait,
    status: Status,
    error: String,
) -> Result<Option<(Task, TaskEvent)>, DbErr> {
    let txn = db.begin().await?;
    let change = Change {
        status: Some(status),
        error: Some(error.clone()),
        message: Some(error),
        ..Default::default()
    };
    let Some((t, ev)) = store::apply(&txn, events, &w.task_id, &waiting(w), change).await? else {
        txn.rollback().await?;
        return Ok(None);
    };
    store::settle_credits(&txn, &t).await?;
    forget(&txn, &w.task_id).await?;
    txn.commit().await?;
    crate::domains::ai_tasks::metrics::finished(&t);
    Ok(Some((t, ev)))
}

/// Waits due: a provider wait whose next check was due before `before` (its message
/// is late or lost), an approval whose deadline passed `now`; oldest first.
pub async fn overdue(
    db: &impl ConnectionTrait,
    before: DateTime<Utc>,
    now: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<Wait>, DbErr> {
    use sea_orm::Condition;
    wait::Entity::find()
        .filter(wait::Column::CheckAt.lt(now))
        .filter(
            Condition::any()
                .add(wait::Column::CheckAt.lt(before))
                .add(wait::Column::WaitingFor.eq(wait::APPROVAL)),
        )
        .order_by_asc(wait::Column::CheckAt)
        .limit(limit)
        .all(db)
        .await
}

/// Puts the next check of `w` at `next` if nothing moved it: the sweep's mark that it
/// sent one (so the next pass does not send it again). `false` when a check moved it.
pub async fn postpone(
    db: &impl ConnectionTrait,
    w: &Wait,
    next: DateTime<Utc>,
) -> Result<bool, DbErr> {
    Ok(wait::Entity::update_many()
        .col_expr(wait::Column::CheckAt, Expr::value(next))
        .filter(wait::Column::TaskId.eq(w.task_id.clone()))
        .filter(wait::Column::Attempt.eq(w.attempt))
        .filter(wait::Column::Checks.eq(w.checks))
        .exec(db)
        .await?
        .rows_affected
        == 1)
}
