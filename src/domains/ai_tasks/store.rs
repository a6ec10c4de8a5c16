//! The queries of the AI-task flow. Every state change is one conditional UPDATE
//! (`… WHERE status IN (…) [AND attempt = ?]`), so a transition happens at most once and a
//! stale attempt cannot write; it appends an event with the next sequence number in the
//! same transaction, and credits move with the transition that causes them.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait as _, Func};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect, TransactionTrait,
};

use super::entity::{event, material, task};
use super::kinds::{Status, TaskKind};
use super::messages::{RUN_STEP, RunStep, TaskEvent};
use crate::broker::{Envelope, Target};
use crate::domains::search_sync;
use crate::outbox::{self, OutboxError};
use crate::users::credits;

pub use task::Model as Task;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("insufficient credits: {needed} needed, {balance} available")]
    InsufficientCredits { needed: i64, balance: i64 },
    /// The user already has `limit` tasks PENDING, PROCESSING or RETRYING.
    #[error("{limit} tasks already in flight")]
    TooManyInFlight { limit: u32 },
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<search_sync::store::StoreError> for StoreError {
    fn from(e: search_sync::store::StoreError) -> Self {
        match e {
            search_sync::store::StoreError::Db(e) => StoreError::Db(e),
            search_sync::store::StoreError::Outbox(e) => StoreError::Outbox(e),
        }
    }
}

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
    Ok(Some((t, ev)))
}

/// The row half of [`apply`]: the conditional update, and the event it calls for, not
/// yet inserted (a batch inserts its events in one statement).
async fn change_row(
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
    let ev = event_of(&t, change.message);
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
fn status_among_sql(column: &str, allowed: &[Status]) -> String {
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
fn guarded_update(
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
    id: &str,
    guard: &Guard<'_>,
    change: Change,
) -> Result<Option<(Task, TaskEvent)>, DbErr> {
    let txn = db.begin().await?;
    let applied = apply(&txn, id, guard, change).await?;
    if applied.is_some() {
        txn.commit().await?;
    } else {
        txn.rollback().await?;
    }
    Ok(applied)
}

fn event_of(t: &Task, message: Option<String>) -> TaskEvent {
    TaskEvent {
        task_id: t.id.clone(),
        user_id: t.user_id.clone(),
        seq: t.seq,
        status: t.status,
        progress: t.progress,
        step: t.step.clone(),
        message,
        at: Utc::now(),
    }
}

fn event_row(ev: &TaskEvent) -> event::ActiveModel {
    event::ActiveModel {
        task_id: Set(ev.task_id.clone()),
        seq: Set(ev.seq),
        status: Set(ev.status),
        progress: Set(ev.progress),
        step: Set(ev.step.clone()),
        message: Set(ev.message.clone()),
        created_at: Set(ev.at),
        ..Default::default()
    }
}

/// One task submission.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub user_id: String,
    pub kind: TaskKind,
    pub prompt: String,
    pub params: serde_json::Value,
    pub cost: i64,
    /// The user's cap on tasks PENDING, PROCESSING or RETRYING (0: none), checked in the
    /// submission's transaction.
    pub max_in_flight: u32,
}

/// (user, cost) of each submission, for the credit reservation.
fn charges(batch: &[NewTask]) -> Vec<(&str, i64)> {
    batch.iter().map(|n| (n.user_id.as_str(), n.cost)).collect()
}

/// [`submit_many`] for the common case where every balance covers its user's share
/// of the batch: one reservation statement. `None` when a balance falls short: the
/// caller must roll back and submit the batch with [`submit_many`], which decides
/// submission by submission.
pub async fn submit_many_if_covered(
    txn: &impl ConnectionTrait,
    batch: &[NewTask],
    max_payload: usize,
) -> Result<Option<Vec<Result<(Task, TaskEvent), StoreError>>>, StoreError> {
    if !credits::reserve_batch_if_covered(txn, &charges(batch)).await? {
        return Ok(None);
    }
    // Counted after the reservation locked the users' rows; a capped submission sends
    // the batch the slow way, which leaves it out before charging anyone.
    if over_cap(txn, batch).await?.iter().any(Option::is_some) {
        return Ok(None);
    }
    let admitted = batch.iter().map(|_| Ok(())).collect();
    Ok(Some(write_batch(txn, batch, admitted, max_payload).await?))
}

/// Per submission: `Some(cap)` when its user already has `cap` tasks PENDING, PROCESSING
/// or RETRYING, the batch's earlier submissions included. The capped users' rows are
/// locked first (in id order, like every reservation), so concurrent transactions of one
/// user count one after the other: the lock is held to the commit, and the next count
/// starts after it and sees the committed tasks.
async fn over_cap(
    txn: &impl ConnectionTrait,
    batch: &[NewTask],
) -> Result<Vec<Option<u32>>, DbErr> {
    let ids: std::collections::BTreeSet<&str> = batch
        .iter()
        .filter(|n| n.max_in_flight > 0)
        .map(|n| n.user_id.as_str())
        .collect();
    if ids.is_empty() {
        return Ok(vec![None; batch.len()]);
    }
    crate::users::lock_many(txn, &ids).await?;
    let mut active: std::collections::HashMap<String, i64> = task::Entity::find()
        .select_only()
        .column(task::Column::UserId)
        .column_as(task::Column::Id.count(), "n")
        .filter(task::Column::UserId.is_in(ids))
        .filter(task::Column::Status.is_in(Status::ACTIVE))
        .group_by(task::Column::UserId)
        .into_tuple::<(String, i64)>()
        .all(txn)
        .await?
        .into_iter()
        .collect();
    Ok(batch
        .iter()
        .map(|n| {
            if n.max_in_flight == 0 {
                return None;
            }
            let count = active.entry(n.user_id.clone()).or_default();
            if *count >= i64::from(n.max_in_flight) {
                Some(n.max_in_flight)
            } else {
                *count += 1;
                None
            }
        })
        .collect())
}

/// Submits tasks in the caller's transaction: for each, reserves its cost (or reports
/// the shortfall), and for those reserved inserts the task (PENDING, event 1), the
/// ledger row and the run message, each kind of row in one statement. Many submissions
/// share one transaction and one commit (see `submitter`).
pub async fn submit_many(
    txn: &impl ConnectionTrait,
    batch: &[NewTask],
    max_payload: usize,
) -> Result<Vec<Result<(Task, TaskEvent), StoreError>>, StoreError> {
    // Over the cap first: those are neither charged nor written.
    let capped = over_cap(txn, batch).await?;
    let charged: Vec<(&str, i64)> = batch
        .iter()
        .zip(&capped)
        .map(|(n, cap)| (n.user_id.as_str(), if cap.is_some() { 0 } else { n.cost }))
        .collect();
    let reserved = match charged.as_slice() {
        [(user_id, cost)] => vec![credits::reserve(txn, user_id, *cost).await?],
        _ => credits::reserve_batch(txn, &charged).await?,
    };
    let admitted = batch
        .iter()
        .zip(capped)
        .zip(reserved)
        .map(|((n, cap), reserved)| match (cap, reserved) {
            (Some(limit), _) => Err(StoreError::TooManyInFlight { limit }),
            (None, Err(credits::Short { balance })) => Err(StoreError::InsufficientCredits {
                needed: n.cost,
                balance,
            }),
            (None, Ok(())) => Ok(()),
        })
        .collect();
    write_batch(txn, batch, admitted, max_payload).await
}

/// Writes the rows of the admitted submissions; the others answer with why not.
async fn write_batch(
    txn: &impl ConnectionTrait,
    batch: &[NewTask],
    admitted: Vec<Result<(), StoreError>>,
    max_payload: usize,
) -> Result<Vec<Result<(Task, TaskEvent), StoreError>>, StoreError> {
    let now = Utc::now();
    let mut results = Vec::with_capacity(batch.len());
    let (mut tasks, mut ledger, mut events, mut messages) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (n, admitted) in batch.iter().zip(admitted) {
        if let Err(refused) = admitted {
            results.push(Err(refused));
            continue;
        }
        let t = task::Model {
            id: uuid::Uuid::now_v7().to_string(),
            user_id: n.user_id.clone(),
            kind: n.kind,
            prompt: n.prompt.clone(),
            params: n.params.to_string(),
            status: Status::Pending,
            attempt: 0,
            step_index: 0,
            step: None,
            progress: 0,
            seq: 1,
            cost: n.cost,
            result: None,
            error: None,
            heartbeat_at: None,
            created_at: now,
            updated_at: now,
            started_at: None,
            finished_at: None,
        };
        if n.cost > 0 {
            ledger.push((
                t.user_id.clone(),
                -n.cost,
                "reserve",
                format!("reserve:{}", t.id),
            ));
        }
        let ev = event_of(&t, Some("accepted".into()));
        events.push(event_row(&ev));
        messages.push((Target::Queue(n.kind.queue()), run_message(&t, 0)));
        tasks.push(task::ActiveModel::from(t.clone()));
        results.push(Ok((t, ev)));
    }
    if !tasks.is_empty() {
        task::Entity::insert_many(tasks)
            .exec_without_returning(txn)
            .await?;
        event::Entity::insert_many(events)
            .exec_without_returning(txn)
            .await?;
        credits::book_many(txn, &ledger).await?;
        outbox::enqueue_many(txn, &messages, max_payload).await?;
    }
    Ok(results)
}

/// Submits one task in the caller's transaction (see [`submit_many`]).
pub async fn submit(
    txn: &impl ConnectionTrait,
    new: &NewTask,
    max_payload: usize,
) -> Result<(Task, TaskEvent), StoreError> {
    let mut results = submit_many(txn, std::slice::from_ref(new), max_payload).await?;
    results
        .pop()
        .unwrap_or_else(|| Err(StoreError::Db(DbErr::Custom("no submission result".into()))))
}

fn run_message(t: &Task, step: i32) -> Envelope {
    let payload = serde_json::to_value(RunStep {
        task_id: t.id.clone(),
        step,
    })
    .unwrap_or_default();
    Envelope::new(RUN_STEP, payload).with_correlation_id(t.id.clone())
}

/// Writes the message that runs step `step` of `t`.
pub async fn enqueue_step(
    txn: &impl ConnectionTrait,
    t: &Task,
    step: i32,
    max_payload: usize,
) -> Result<(), OutboxError> {
    outbox::enqueue(
        txn,
        Target::Queue(t.kind.queue()),
        &run_message(t, step),
        max_payload,
    )
    .await
}

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
/// steps, or waiting to retry) counts as not started.
pub fn cancel_refund(t: &Task, started_percent: u8) -> i64 {
    if t.started_at.is_none() {
        return t.cost;
    }
    let steps = t.kind.steps().len().max(1) as i64;
    let at = i64::from(t.step_index).clamp(0, steps);
    let running = t.status == Status::Processing && t.heartbeat_at.is_some() && at < steps;
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
    id: &str,
    started_percent: u8,
    admin: Option<&str>,
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
    let guard = Guard::status(&[Status::Pending, Status::Retrying, Status::Processing]);
    let change = Change {
        status: Some(Status::Canceled),
        error: Some("canceled".into()),
        message: Some("canceled".into()),
        ..Default::default()
    };
    let Some((t, ev)) = apply(&txn, id, &guard, change).await? else {
        return Ok(None);
    };
    let refund = cancel_refund(&before, started_percent);
    if refund > 0 {
        credits::refund(&txn, &t.user_id, refund, &format!("refund:{}", t.id)).await?;
    }
    if refund < t.cost {
        credits::consume(&txn, &t.user_id, &format!("consume:{}", t.id)).await?;
    }
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
    super::metrics::ended(&t, refund);
    Ok(Some((t, ev, refund)))
}

/// Moves a task to a terminal failure state (FAILED or CANCELED) from `from`, refunding.
pub async fn finish_unsuccessfully(
    db: &DatabaseConnection,
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
    let Some((t, ev)) = apply(&txn, id, guard, change).await? else {
        return Ok(None);
    };
    settle_credits(&txn, &t).await?;
    txn.commit().await?;
    super::metrics::finished(&t);
    Ok(Some((t, ev)))
}

/// One step's result to commit: the task as claimed (its attempt fences the write), the
/// step's name, and what to store: the final result after the last step, every step's
/// output so far after the others.
pub struct StepResult<'a> {
    pub task: &'a Task,
    pub step: &'a str,
    pub result: serde_json::Value,
    pub last: bool,
}

/// Commits a wave of step results in `txn`: one conditional update per task (each holds
/// its own result; it applies only while the attempt still holds the step), then, as one
/// insert each for the whole wave, their events, the ledger rows that consume the
/// finished tasks' reservations, their materials with their `search.sync` messages, and
/// the outbox rows of the next steps. Per result, in order: the task as it is now and its
/// event, or `None` when it was fenced (canceled meanwhile, re-driven to a newer attempt).
pub async fn commit_steps(
    txn: &impl ConnectionTrait,
    results: &[StepResult<'_>],
    max_payload: usize,
) -> Result<Vec<Option<(Task, TaskEvent)>>, StoreError> {
    let applied =
        if txn.get_database_backend() == sea_orm::DatabaseBackend::Postgres && results.len() > 1 {
            update_steps_pg(txn, results).await?
        } else {
            update_steps(txn, results).await?
        };
    let done = || {
        results
            .iter()
            .zip(&applied)
            .filter_map(|(r, a)| a.as_ref().map(|(t, _)| (r, t)))
    };
    let events: Vec<_> = applied
        .iter()
        .flatten()
        .map(|(_, ev)| event_row(ev))
        .collect();
    if !events.is_empty() {
        event::Entity::insert_many(events)
            .exec_without_returning(txn)
            .await?;
    }
    let consumed: Vec<credits::Entry<'_>> = done()
        .filter(|(r, t)| r.last && t.cost != 0)
        .map(|(_, t)| (t.user_id.clone(), 0, "consume", format!("consume:{}", t.id)))
        .collect();
    credits::book_many(txn, &consumed).await?;
    let materials: Vec<search_sync::store::NewMaterial> = done()
        .filter(|(r, _)| r.last)
        .map(|(r, t)| search_sync::store::NewMaterial {
            user_id: t.user_id.clone(),
            task_id: t.id.clone(),
            kind: t.kind.as_str().to_owned(),
            title: t.prompt.clone(),
            content: material_content(t.kind, &r.result),
        })
        .collect();
    search_sync::store::create_many(txn, materials).await?;
    // The next steps are published only once this transaction committed (outbox).
    let next: Vec<(Target, Envelope)> = done()
        .filter(|(r, _)| !r.last)
        .map(|(_, t)| (Target::Queue(t.kind.queue()), run_message(t, t.step_index)))
        .collect();
    outbox::enqueue_many(txn, &next, max_payload).await?;
    Ok(applied)
}

/// What a step's end writes: (status, progress, event message).
fn step_end(r: &StepResult<'_>) -> (Status, i32, String) {
    if r.last {
        (Status::Success, 100, "done".to_owned())
    } else {
        let steps = Ord::max(r.task.kind.steps().len() as i32, 1);
        (
            Status::Processing,
            (r.task.step_index + 1) * 100 / steps,
            format!("{} done", r.step),
        )
    }
}

/// The task updates of a wave, one conditional update per task.
async fn update_steps(
    txn: &impl ConnectionTrait,
    results: &[StepResult<'_>],
) -> Result<Vec<Option<(Task, TaskEvent)>>, DbErr> {
    let mut applied = Vec::with_capacity(results.len());
    for r in results {
        let (status, progress, message) = step_end(r);
        let change = Change {
            status: r.last.then_some(status),
            progress: Some(progress),
            step_index: Some(r.task.step_index + 1),
            // A terminal status clears the lease itself.
            release_lease: !r.last,
            result: Some(r.result.to_string()),
            message: Some(message),
            ..Default::default()
        };
        let guard = Guard::holder(r.task.attempt).at_step(r.task.step_index);
        applied.push(change_row(txn, &r.task.id, &guard, change).await?);
    }
    Ok(applied)
}

/// [`update_steps`] as one statement on PostgreSQL: `UPDATE … FROM (VALUES …)` with each
/// task's guard (attempt, step) and values in its row, `RETURNING` the tasks it changed.
async fn update_steps_pg(
    txn: &impl ConnectionTrait,
    results: &[StepResult<'_>],
) -> Result<Vec<Option<(Task, TaskEvent)>>, DbErr> {
    use sea_orm::{Statement, Value};
    let now = Utc::now();
    let mut values: Vec<Value> = vec![now.into()];
    let mut rows = Vec::with_capacity(results.len());
    let mut messages = std::collections::HashMap::with_capacity(results.len());
    for r in results {
        let (status, progress, message) = step_end(r);
        let n = values.len();
        rows.push(format!(
            "(${}::text, ${}::int, ${}::int, ${}::text, ${}::int, ${}::text, ${}::bool)",
            n + 1,
            n + 2,
            n + 3,
            n + 4,
            n + 5,
            n + 6,
            n + 7
        ));
        values.extend([
            r.task.id.clone().into(),
            r.task.attempt.into(),
            r.task.step_index.into(),
            sea_orm::ActiveEnum::to_value(&status).into(),
            progress.into(),
            r.result.to_string().into(),
            r.last.into(),
        ]);
        messages.insert(r.task.id.as_str(), message);
    }
    let processing = status_among_sql("t.status", &[Status::Processing]);
    let sql = format!(
        "UPDATE tasks AS t SET seq = t.seq + 1, updated_at = $1, status = v.status, \
         progress = v.progress, step_index = t.step_index + 1, result = v.result, \
         heartbeat_at = NULL, finished_at = CASE WHEN v.last THEN $1 ELSE t.finished_at END \
         FROM (VALUES {}) AS v(id, attempt, step_index, status, progress, result, last) \
         WHERE t.id = v.id AND t.attempt = v.attempt AND t.step_index = v.step_index \
         AND {processing} RETURNING t.*",
        rows.join(", ")
    );
    let changed = task::Entity::find()
        .from_raw_sql(Statement::from_sql_and_values(
            sea_orm::DatabaseBackend::Postgres,
            sql,
            values,
        ))
        .all(txn)
        .await?;
    let mut changed: std::collections::HashMap<String, Task> =
        changed.into_iter().map(|t| (t.id.clone(), t)).collect();
    Ok(results
        .iter()
        .map(|r| {
            changed.remove(&r.task.id).map(|t| {
                let ev = event_of(&t, messages.remove(r.task.id.as_str()));
                (t, ev)
            })
        })
        .collect())
}

/// What a finished task's material holds: the text for text kinds, the result otherwise.
fn material_content(kind: TaskKind, result: &serde_json::Value) -> String {
    if kind.is_text() {
        result
            .get("text")
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .unwrap_or_else(|| result.to_string())
    } else {
        result.to_string()
    }
}

/// Tasks by id (a batch of step messages), in no particular order.
pub async fn get_many(db: &impl ConnectionTrait, ids: &[&str]) -> Result<Vec<Task>, DbErr> {
    task::Entity::find()
        .filter(task::Column::Id.is_in(ids.iter().map(|id| (*id).to_owned())))
        .all(db)
        .await
}

/// How many tasks each of `users` has PROCESSING (by index): the fair-share check of a
/// batch, one query for all of its tenants.
pub async fn running_by_user(
    db: &impl ConnectionTrait,
    users: &[&str],
) -> Result<std::collections::HashMap<String, u64>, DbErr> {
    let rows: Vec<(String, i64)> = task::Entity::find()
        .select_only()
        .column(task::Column::UserId)
        .column_as(task::Column::Id.count(), "n")
        .filter(task::Column::UserId.is_in(users.iter().map(|u| (*u).to_owned())))
        .filter(task::Column::Status.eq(Status::Processing))
        .group_by(task::Column::UserId)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(user, n)| (user, u64::try_from(n).unwrap_or(0)))
        .collect())
}

/// One step claim of a batch: task, the step its message runs, that step's name.
pub struct StepClaim<'a> {
    pub id: &'a str,
    pub step_index: i32,
    pub step: &'a str,
}

/// Claims the lease of every task of `wanted` that is PENDING, RETRYING or PROCESSING at
/// the claim's step with no fresh lease (heartbeat older than `stale_before`), in one
/// transaction: [`apply`]'s guarded update with a claim, one statement per step for the
/// batch, and the claims' events as one insert. Where `UPDATE … RETURNING` exists
/// (PostgreSQL, SQLite) the claimed rows come back with it (no read before: a
/// `FOR UPDATE` read writes every row it locks on PostgreSQL); on MariaDB the rows are
/// locked first (in id order, so two batches that share a task cannot deadlock on the
/// rest) and read again after: the ones whose attempt moved are ours.
/// Returns the claimed tasks as they are now, with their events; the others are held
/// by someone else, finished, or at another step.
pub async fn claim_many(
    db: &DatabaseConnection,
    wanted: &[StepClaim<'_>],
    stale_before: DateTime<Utc>,
) -> Result<Vec<(Task, TaskEvent)>, DbErr> {
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let txn = db.begin().await?;
    let returning = txn.support_returning();
    let all_ids = || wanted.iter().map(|c| c.id.to_owned());
    let attempts_before: std::collections::HashMap<String, i32> = if returning {
        Default::default()
    } else {
        task::Entity::find()
            .filter(task::Column::Id.is_in(all_ids()))
            .order_by_asc(task::Column::Id)
            .lock(sea_orm::sea_query::LockType::Update)
            .all(&txn)
            .await?
            .into_iter()
            .map(|t| (t.id, t.attempt))
            .collect()
    };
    let now = Utc::now();
    let mut groups: Vec<(i32, &str)> = wanted.iter().map(|c| (c.step_index, c.step)).collect();
    groups.sort_unstable();
    groups.dedup();
    let mut claimed = Vec::with_capacity(wanted.len());
    for (step_index, step) in groups {
        let ids = wanted
            .iter()
            .filter(|c| c.step_index == step_index && c.step == step)
            .map(|c| c.id.to_owned());
        let guard = Guard {
            statuses: &[Status::Pending, Status::Retrying, Status::Processing],
            attempt: None,
            step_index: Some(step_index),
            lease_free_before: Some(stale_before),
        };
        let change = Change {
            status: Some(Status::Processing),
            claim: true,
            step: Some(step.to_owned()),
            ..Default::default()
        };
        let q = guarded_update(ids, &guard, &change, now);
        if returning {
            claimed.extend(q.exec_with_returning(&txn).await?);
        } else {
            q.exec(&txn).await?;
        }
    }
    if !returning {
        // Locked by this transaction since the read: any change is our claim.
        claimed = task::Entity::find()
            .filter(task::Column::Id.is_in(all_ids()))
            .all(&txn)
            .await?
            .into_iter()
            .filter(|t| attempts_before.get(&t.id).is_some_and(|a| t.attempt > *a))
            .collect();
    }
    let out: Vec<(Task, TaskEvent)> = claimed
        .into_iter()
        .map(|t| {
            let message = format!("{} started", t.step.as_deref().unwrap_or("step"));
            let ev = event_of(&t, Some(message));
            (t, ev)
        })
        .collect();
    if !out.is_empty() {
        event::Entity::insert_many(out.iter().map(|(_, ev)| event_row(ev)))
            .exec_without_returning(&txn)
            .await?;
    }
    txn.commit().await?;
    Ok(out)
}

pub async fn get(db: &impl ConnectionTrait, id: &str) -> Result<Option<Task>, DbErr> {
    task::Entity::find_by_id(id.to_owned()).one(db).await
}

/// A user's tasks, newest first, after `cursor` (a task id) when given.
pub async fn list(
    db: &impl ConnectionTrait,
    user_id: &str,
    status: Option<Status>,
    kind: Option<TaskKind>,
    cursor: Option<&str>,
    limit: u64,
) -> Result<Vec<Task>, DbErr> {
    let mut q = task::Entity::find()
        .filter(task::Column::UserId.eq(user_id))
        .order_by_desc(task::Column::Id)
        .limit(limit);
    if let Some(s) = status {
        q = q.filter(task::Column::Status.eq(s));
    }
    if let Some(k) = kind {
        q = q.filter(task::Column::Kind.eq(k));
    }
    if let Some(c) = cursor {
        q = q.filter(task::Column::Id.lt(c));
    }
    q.all(db).await
}

/// Events of a task after `after_seq`, in order.
pub async fn events_after(
    db: &impl ConnectionTrait,
    task_id: &str,
    after_seq: i32,
) -> Result<Vec<event::Model>, DbErr> {
    event::Entity::find()
        .filter(event::Column::TaskId.eq(task_id))
        .filter(event::Column::Seq.gt(after_seq))
        .order_by_asc(event::Column::Seq)
        .all(db)
        .await
}

/// PROCESSING tasks whose lease went stale before `before`.
pub async fn stale(
    db: &impl ConnectionTrait,
    before: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<Task>, DbErr> {
    task::Entity::find()
        .filter(task::Column::Status.eq(Status::Processing))
        .filter(
            task::Column::HeartbeatAt
                .is_null()
                .or(task::Column::HeartbeatAt.lt(before)),
        )
        .filter(task::Column::UpdatedAt.lt(before))
        .limit(limit)
        .all(db)
        .await
}

pub async fn material_of(
    db: &impl ConnectionTrait,
    task_id: &str,
) -> Result<Option<material::Model>, DbErr> {
    material::Entity::find()
        .filter(material::Column::TaskId.eq(task_id))
        .one(db)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(kind: TaskKind, status: Status, step_index: i32, leased: bool, started: bool) -> Task {
        let now = Utc::now();
        task::Model {
            id: "t".into(),
            user_id: "u".into(),
            kind,
            prompt: "p".into(),
            params: "{}".into(),
            status,
            attempt: 1,
            step_index,
            step: None,
            progress: 0,
            seq: 1,
            cost: 10,
            result: None,
            error: None,
            heartbeat_at: leased.then_some(now),
            created_at: now,
            updated_at: now,
            started_at: started.then_some(now),
            finished_at: None,
        }
    }

    #[test]
    fn the_cancel_refund_follows_the_policy() {
        use Status::*;
        use TaskKind::{Image, VideoAnalysis};
        // Never started: everything back.
        assert_eq!(
            cancel_refund(&task(Image, Pending, 0, false, false), 50),
            10
        );
        // Running its only step: the percent of it.
        assert_eq!(
            cancel_refund(&task(Image, Processing, 0, true, true), 50),
            5
        );
        assert_eq!(cancel_refund(&task(Image, Processing, 0, true, true), 0), 0);
        // A 4-step pipeline running step 0: 3 steps + half of one, of 4 (10 × 3.5 / 4 = 8.75).
        assert_eq!(
            cancel_refund(&task(VideoAnalysis, Processing, 0, true, true), 50),
            8
        );
        // Between steps (step 1 done, step 2 not claimed: no lease): steps 2 and 3 back.
        assert_eq!(
            cancel_refund(&task(VideoAnalysis, Processing, 2, false, true), 50),
            5
        );
        // Waiting to retry step 1 (lease released): steps 1-3 back, nothing for the failure.
        assert_eq!(
            cancel_refund(&task(VideoAnalysis, Retrying, 1, false, true), 50),
            7
        );
    }
}
