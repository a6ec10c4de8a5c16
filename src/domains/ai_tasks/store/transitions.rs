//! The transition engine: every state change is one conditional UPDATE guarded by
//! status, attempt and step ([`Guard`]), with its event appended in the same transaction.

#[allow(unused_imports)]
use super::*;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, Func};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, TransactionTrait,
};

use crate::domains::ai_tasks::entity::{event, task};
use crate::domains::ai_tasks::kinds::Status;
use crate::domains::ai_tasks::messages::{EventKind, TaskEvent};
use crate::events::Events;

/// What a conditional change may do.
#[derive(Debug, Default)]
pub struct Change {
    pub status: Option<Status>,
    pub progress: Option<i32>,
    pub step: Option<String>,
    pub step_index: Option<i32>,
    pub claim: bool,
    pub release_lease: bool,
    pub result: Option<String>,
    pub error: Option<String>,
    /// The event's message.
    pub message: Option<String>,
    /// A piece of streamed text (a `delta` event), or a `reset` event.
    pub text: Option<(EventKind, String)>,
}

/// When a change may apply.
#[derive(Debug)]
pub struct Guard<'a> {
    pub statuses: &'a [Status],
    pub attempt: Option<i32>,
    pub step_index: Option<i32>,
    /// Only if the lease is free or its heartbeat is older than this.
    pub lease_free_before: Option<DateTime<Utc>>,
}

impl<'a> Guard<'a> {
    pub fn status(statuses: &'a [Status]) -> Self {
        Guard {
            statuses,
            attempt: None,
            step_index: None,
            lease_free_before: None,
        }
    }
    pub fn holder(attempt: i32) -> Self {
        Guard {
            statuses: &[Status::Processing],
            attempt: Some(attempt),
            step_index: None,
            lease_free_before: None,
        }
    }

    /// Only while the task is at step `step_index`.
    pub fn at_step(self, step_index: i32) -> Self {
        Guard {
            step_index: Some(step_index),
            ..self
        }
    }
}

/// Applies `change` if `guard` holds; returns the task as it is now and the event
/// appended, or `None` when the guard did not hold.
pub async fn apply(
    txn: &impl ConnectionTrait,
    events: &Events,
    id: &str,
    guard: &Guard<'_>,
    change: Change,
) -> Result<Option<(Task, TaskEvent)>, DbErr> {
    let Some((t, ev)) = change_row(txn, id, guard, change).await? else {
        return Ok(None);
    };
    event::Entity::insert(event_row(&ev))
        .exec_without_returning(txn)
        .await?;
    crate::domains::ai_tasks::notify::ended(txn, events, &[&t]).await?;
    Ok(Some((t, ev)))
}

/// The row half of [`apply`]: the conditional update, and the event it calls for, not
/// yet inserted (a batch inserts its events in one statement).
pub(super) async fn change_row(
    txn: &impl ConnectionTrait,
    id: &str,
    guard: &Guard<'_>,
    change: Change,
) -> Result<Option<(Task, TaskEvent)>, DbErr> {
    let q = guarded_update([id.to_owned()], guard, &change, Utc::now());
    let t = if txn.support_returning() {
        // PostgreSQL: the updated row comes back with the update, one round trip less
        // (the id filter matches at most one row).
        match q.exec_with_returning(txn).await?.pop() {
            Some(t) => t,
            None => return Ok(None),
        }
    } else {
        if q.exec(txn).await?.rows_affected != 1 {
            return Ok(None);
        }
        let Some(t) = task::Entity::find_by_id(id.to_owned()).one(txn).await? else {
            return Ok(None);
        };
        t
    };
    let mut ev = event_of(&t, change.message);
    if let Some((kind, delta)) = change.text {
        ev.kind = kind;
        ev.delta = Some(delta);
    }
    Ok(Some((t, ev)))
}

/// `status IN (allowed)` for a statement that names its tasks by id, written as
/// `status NOT IN (every other status)`: the same rows (the column holds only these
/// values), but no index serves `NOT IN`, so the planner reaches the rows by the
/// primary key. With `IN`, statistics dominated by finished tasks estimate the active
/// statuses at a row or two and the planner took the status index instead: a walk over
/// every task in flight (a backlog of thousands in a burst) for each claim of a few.
pub(crate) fn status_among(allowed: &[Status]) -> sea_orm::sea_query::SimpleExpr {
    task::Column::Status.is_not_in(others(allowed))
}

/// [`status_among`] as SQL text on `column`, for a raw statement (the values are the
/// enum's constants, not input).
pub(super) fn status_among_sql(column: &str, allowed: &[Status]) -> String {
    let others: Vec<String> = others(allowed)
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    format!("{column} NOT IN ({})", others.join(", "))
}

/// Every status but `allowed`.
fn others(allowed: &[Status]) -> Vec<Status> {
    use sea_orm::Iterable as _;
    Status::iter().filter(|s| !allowed.contains(s)).collect()
}

/// The conditional update of [`apply`]: `change` on the tasks `ids` where `guard` holds.
pub(super) fn guarded_update(
    ids: impl IntoIterator<Item = String>,
    guard: &Guard<'_>,
    change: &Change,
    now: DateTime<Utc>,
) -> sea_orm::UpdateMany<task::Entity> {
    let mut q = task::Entity::update_many()
        .col_expr(task::Column::Seq, Expr::col(task::Column::Seq).add(1))
        .col_expr(task::Column::UpdatedAt, Expr::value(now))
        .filter(task::Column::Id.is_in(ids))
        .filter(status_among(guard.statuses));
    if let Some(a) = guard.attempt {
        q = q.filter(task::Column::Attempt.eq(a));
    }
    if let Some(s) = guard.step_index {
        q = q.filter(task::Column::StepIndex.eq(s));
    }
    if let Some(before) = guard.lease_free_before {
        q = q.filter(
            task::Column::HeartbeatAt
                .is_null()
                .or(task::Column::HeartbeatAt.lt(before))
                .or(task::Column::Status.ne(Status::Processing)),
        );
    }
    if let Some(s) = change.status {
        q = q.col_expr(task::Column::Status, Expr::value(s));
        if s.is_terminal() {
            q = q.col_expr(task::Column::FinishedAt, Expr::value(now));
            q = q.col_expr(
                task::Column::HeartbeatAt,
                Expr::value(Option::<DateTime<Utc>>::None),
            );
        }
    }
    if change.claim {
        q = q
            .col_expr(
                task::Column::Attempt,
                Expr::col(task::Column::Attempt).add(1),
            )
            .col_expr(task::Column::HeartbeatAt, Expr::value(now))
            .col_expr(
                task::Column::StartedAt,
                Expr::FunctionCall(Func::coalesce([
                    Expr::col(task::Column::StartedAt),
                    Expr::value(now),
                ])),
            );
    }
    if change.release_lease {
        q = q.col_expr(
            task::Column::HeartbeatAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        );
    }
    if let Some(p) = change.progress {
        q = q.col_expr(task::Column::Progress, Expr::value(p));
    }
    if let Some(s) = &change.step {
        q = q.col_expr(task::Column::Step, Expr::value(s.clone()));
    }
    if let Some(i) = change.step_index {
        q = q.col_expr(task::Column::StepIndex, Expr::value(i));
    }
    if let Some(r) = &change.result {
        q = q.col_expr(task::Column::Result, Expr::value(r.clone()));
    }
    if let Some(e) = &change.error {
        q = q.col_expr(task::Column::Error, Expr::value(e.clone()));
    }
    q
}

/// [`apply`] in a transaction of its own: the change and its event commit together
/// (one commit instead of three autocommitted statements, and no status change without
/// its event after a crash).
pub async fn apply_now(
    db: &DatabaseConnection,
    events: &Events,
    id: &str,
    guard: &Guard<'_>,
    change: Change,
) -> Result<Option<(Task, TaskEvent)>, DbErr> {
    let txn = db.begin().await?;
    let applied = apply(&txn, events, id, guard, change).await?;
    if applied.is_some() {
        txn.commit().await?;
    } else {
        txn.rollback().await?;
    }
    Ok(applied)
}

pub(super) fn event_of(t: &Task, message: Option<String>) -> TaskEvent {
    TaskEvent {
        task_id: t.id.clone(),
        user_id: t.user_id.clone(),
        seq: t.seq,
        status: t.status,
        progress: t.progress,
        step: t.step.clone(),
        message,
        at: Utc::now(),
        kind: EventKind::Progress,
        delta: None,
    }
}

pub(super) fn event_row(ev: &TaskEvent) -> event::ActiveModel {
    event::ActiveModel {
        task_id: Set(ev.task_id.clone()),
        seq: Set(ev.seq),
        status: Set(ev.status),
        progress: Set(ev.progress),
        step: Set(ev.step.clone()),
        message: Set(ev.message.clone()),
        created_at: Set(ev.at),
        kind: Set(ev.kind.as_str().to_owned()),
        delta: Set(ev.delta.clone()),
        ..Default::default()
    }
}
