//! A wave of step results committed together: results, next steps, events, credits and
//! the finished tasks' events (their final states, and their outputs, of which search
//! sync makes materials), each in one statement where it can.

#[allow(unused_imports)]
use super::*;
use chrono::Utc;
use sea_orm::{ConnectionTrait, DbErr, EntityTrait};

use crate::broker::{Envelope, Target};
use crate::domains::ai_tasks::entity::{event, task};
use crate::domains::ai_tasks::events::{OUTPUT, Output};
use crate::domains::ai_tasks::kinds::{Lane, Status, TaskKind};
use crate::domains::ai_tasks::messages::TaskEvent;
use crate::domains::ai_tasks::usage::{self, Usage, pricing::Price};
use crate::events::{Event, Events};
use crate::outbox::{self};
use crate::storage::{self, records::GeneratedFile};
use crate::users::credits;

/// One step's result to commit: the task as claimed (its attempt fences the write), the
/// step's name, and what to store: the final result after the last step, every step's
/// output so far after the others.
pub struct StepResult<'a> {
    pub task: &'a Task,
    pub step: &'a str,
    pub result: serde_json::Value,
    pub last: bool,
    /// What the step consumed at its provider.
    pub usage: Usage,
    /// How the task's kind is priced (its charge is booked with its last step).
    pub price: Price,
    /// The next step waits this long for a person's approval before it runs (its task
    /// goes WAITING instead of the next step's message going out).
    pub approval: Option<std::time::Duration>,
    /// What the material is found by in a search by meaning (a video's last step).
    pub vectors: Option<crate::search::semantic::Embedded>,
    /// The step's trace (traces on): the next step's message continues it.
    pub trace: Option<&'a str>,
}

/// A result that applied: the task as it is now, its event, and the credits its success
/// gave back (a per-token reservation's unused part).
pub struct Committed {
    pub task: Task,
    pub event: TaskEvent,
    pub refunded: i64,
}

/// Commits a wave of step results in `txn`: one conditional update per task (each holds
/// its own result; it applies only while the attempt still holds the step), then, as one
/// insert each for the whole wave, their events, the ledger rows that consume the
/// finished tasks' reservations, the outbox rows of the next steps, and the steps' usage
/// rows; the finished tasks' events go through `events` (their outputs, and their final
/// states for the listeners that want them), heard in `txn`; a finished task priced
/// by the token is charged what its steps used and gets the rest of its reservation
/// back. Per result, in order: what was committed, or `None` when it was fenced
/// (canceled meanwhile, re-driven to a newer attempt).
pub async fn commit_steps(
    txn: &impl ConnectionTrait,
    events: &Events,
    results: &[StepResult<'_>],
    max_payload: usize,
) -> Result<Vec<Option<Committed>>, StoreError> {
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
    let rows: Vec<_> = applied
        .iter()
        .flatten()
        .map(|(_, ev)| event_row(ev))
        .collect();
    if !rows.is_empty() {
        event::Entity::insert_many(rows)
            .exec_without_returning(txn)
            .await?;
    }
    let consumed: Vec<credits::Entry<'_>> = done()
        .filter(|(r, t)| r.last && t.cost != 0)
        .map(|(_, t)| (t.user_id.clone(), 0, "consume", format!("consume:{}", t.id)))
        .collect();
    credits::book_many(txn, &consumed).await?;
    let refunds = charge_usage(txn, done().collect()).await?;
    // The tasks that ended: their outputs, always (search sync makes materials of
    // them), then their final states, with one question to the listeners for both;
    // views are built only for what a listener wants.
    let ended: Vec<&Task> = done().filter(|(r, _)| r.last).map(|(_, t)| t).collect();
    let interest = crate::domains::ai_tasks::notify::interest(txn, events, &ended).await?;
    let mut recorded: Vec<Event> = done()
        .filter(|(r, _)| r.last)
        .map(|(r, t)| {
            let output = Output {
                task_id: t.id.clone(),
                kind: t.kind.as_str().to_owned(),
                prompt: t.prompt.clone(),
                content: material_content(t.kind, &r.result),
                vectors: r.vectors.clone(),
            };
            Event::with_detail(t.user_id.clone(), &OUTPUT, output)
        })
        .collect();
    recorded.extend(crate::domains::ai_tasks::notify::events(&interest, ended));
    interest.record(txn, recorded).await.map_err(DbErr::from)?;
    // Files the steps wrote to the store are recorded (and counted in their owner's
    // usage) with the step's commit: a file exists for the API exactly when its step
    // does. A fenced result's files are left to the collector as orphans.
    for (r, t) in done() {
        // A pipeline's result holds every step's output by name: the files are the
        // step's own.
        let own = if t.kind.steps().len() > 1 {
            r.result.get(r.step)
        } else {
            Some(&r.result)
        };
        let files: Vec<GeneratedFile> = own
            .and_then(|o| o.get("files"))
            .and_then(|f| serde_json::from_value(f.clone()).ok())
            .unwrap_or_default();
        if !files.is_empty() {
            storage::records::record_generated(txn, &t.user_id, &t.id, &files).await?;
        }
    }
    // A step that finished at its provider waits no more.
    let parked: Vec<&str> = done()
        .filter(|(r, _)| r.task.status == Status::Waiting)
        .map(|(_, t)| t.id.as_str())
        .collect();
    waits::forget_many(txn, &parked).await?;
    // A step that needs an approval waits for it; the others are published only once
    // this transaction committed (outbox).
    let gated: Vec<(&Task, std::time::Duration)> = done()
        .filter(|(r, _)| !r.last)
        .filter_map(|(r, t)| r.approval.map(|a| (t, a)))
        .collect();
    waits::wait_for_approvals(txn, &gated).await?;
    let next: Vec<(Target, Envelope)> = done()
        .filter(|(r, _)| !r.last && r.approval.is_none())
        .map(|(r, t)| {
            (
                Target::Queue(t.kind.queue_in(t.step_index, Lane::of(&t.params))),
                run_message(t, t.step_index).in_trace(r.trace),
            )
        })
        .collect();
    outbox::enqueue_many(txn, &next, max_payload).await?;
    Ok(applied
        .into_iter()
        .map(|a| {
            a.map(|(task, event)| Committed {
                refunded: refunds.get(task.id.as_str()).copied().unwrap_or(0),
                task,
                event,
            })
        })
        .collect())
}

/// The usage rows of the applied results (a step that consumed nothing and charged
/// nothing writes none), and each finished task's charge: the flat cost plus its steps'
/// tokens as its kind prices them, at most what it reserved; the rest goes back. Per
/// task given something back: how much.
async fn charge_usage(
    txn: &impl ConnectionTrait,
    done: Vec<(&StepResult<'_>, &Task)>,
) -> Result<std::collections::HashMap<String, i64>, DbErr> {
    // Only a priced pipeline's charge needs the tokens of its earlier steps.
    let pipelines: Vec<&str> = done
        .iter()
        .filter(|(r, t)| r.last && r.price.tokens.is_some() && t.kind.steps().len() > 1)
        .map(|(_, t)| t.id.as_str())
        .collect();
    let earlier = usage::record::tokens_of(txn, &pipelines).await?;
    let mut refunds = std::collections::HashMap::new();
    let mut rows = Vec::new();
    for (r, t) in &done {
        let charged = if r.last {
            let used = earlier.get(&t.id).copied().unwrap_or_default() + r.usage.tokens();
            r.price.charge(used, t.cost)
        } else {
            0
        };
        if r.last && charged < t.cost {
            let back = t.cost - charged;
            credits::refund(txn, &t.user_id, back, &format!("refund:{}", t.id)).await?;
            refunds.insert(t.id.clone(), back);
        }
        if charged != 0 || !r.usage.is_empty() {
            rows.push(usage::record::Row {
                task_id: &t.id,
                user_id: &t.user_id,
                kind: t.kind.as_str(),
                step: r.step,
                usage: &r.usage,
                credits: charged,
            });
        }
    }
    usage::record::insert(txn, &rows).await?;
    Ok(refunds)
}

/// What a step's end writes: (status, progress, event message).
fn step_end(r: &StepResult<'_>) -> (Status, i32, String) {
    if r.last {
        (Status::Success, 100, "done".to_owned())
    } else {
        let steps = Ord::max(r.task.kind.steps().len() as i32, 1);
        let progress = (r.task.step_index + 1) * 100 / steps;
        match r.approval {
            Some(_) => (
                Status::Waiting,
                progress,
                format!("{} done; waiting for approval", r.step),
            ),
            None => (Status::Processing, progress, format!("{} done", r.step)),
        }
    }
}

/// The statuses a step's result commits from: running on a worker, or parked at its
/// provider (a check found its job finished).
const HOLDING: &[Status] = &[Status::Processing, Status::Waiting];

/// The task updates of a wave, one conditional update per task.
async fn update_steps(
    txn: &impl ConnectionTrait,
    results: &[StepResult<'_>],
) -> Result<Vec<Option<(Task, TaskEvent)>>, DbErr> {
    let mut applied = Vec::with_capacity(results.len());
    for r in results {
        let (status, progress, message) = step_end(r);
        let change = Change {
            // Also for a middle step: one that finished at its provider leaves WAITING.
            status: Some(status),
            progress: Some(progress),
            step_index: Some(r.task.step_index + 1),
            // A terminal status clears the lease itself.
            release_lease: !r.last,
            result: Some(r.result.to_string()),
            message: Some(message),
            ..Default::default()
        };
        let guard = Guard {
            statuses: HOLDING,
            ..Guard::holder(r.task.attempt)
        }
        .at_step(r.task.step_index);
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
    let processing = status_among_sql("t.status", HOLDING);
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

/// What a finished task's output holds: the text for text kinds, the result otherwise.
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
