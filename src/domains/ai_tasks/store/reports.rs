//! What running steps report (progress, streamed text), for many tasks at once: a model
//! emitting a token every 20 ms on a thousand streams is 20,000 delta events a second
//! even coalesced to one per 50 ms per task, and a thousand simulated steps ticking
//! progress are thousands more: far more than one transaction each. [`append_reports`]
//! takes the pending reports of every running step together: one statement moves each
//! task's sequence on by its number of events (and its progress, when it reports one;
//! a report also refreshes the lease, so a step that reports needs no heartbeat),
//! under the attempt's guard (PostgreSQL: `UPDATE … FROM (VALUES …) RETURNING`;
//! elsewhere one guarded update per task and one read back), and one insert writes all
//! their events.

#[allow(unused_imports)]
use super::*;
use std::collections::HashMap;

use chrono::Utc;
use sea_orm::sea_query::{Expr, ExprTrait as _};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseBackend, DbErr, EntityTrait, QueryFilter};

use crate::domains::ai_tasks::entity::{event, task};
use crate::domains::ai_tasks::kinds::Status;
use crate::domains::ai_tasks::messages::{EventKind, TaskEvent};

/// One reported event.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Streamed text: a `delta`, or a `reset` (discard earlier attempts' text).
    Text(EventKind, String),
    /// The task's progress (0-99 overall), the step it is at, a message.
    Progress {
        progress: i32,
        step: String,
        message: Option<String>,
    },
}

/// What one running step reported since its last write, in order. A task appears at
/// most once per call: its reporter waits for one write before the next.
#[derive(Debug, Clone)]
pub struct ReportWrite {
    pub id: String,
    pub attempt: i32,
    pub step_index: i32,
    pub pieces: Vec<Piece>,
}

impl ReportWrite {
    /// The last progress reported, which the task row takes.
    fn progress(&self) -> Option<(i32, &str)> {
        self.pieces.iter().rev().find_map(|p| match p {
            Piece::Progress { progress, step, .. } => Some((*progress, step.as_str())),
            Piece::Text(..) => None,
        })
    }
}

/// Appends each write's pieces as events while its attempt still holds its step. Per
/// write, in order: its events, or `None` when it was fenced (canceled, re-driven).
pub async fn append_reports(
    txn: &impl ConnectionTrait,
    writes: &[ReportWrite],
) -> Result<Vec<Option<Vec<TaskEvent>>>, DbErr> {
    let mut moved = if txn.get_database_backend() == DatabaseBackend::Postgres {
        advance_pg(txn, writes).await?
    } else {
        advance(txn, writes).await?
    };
    let now = Utc::now();
    let mut out = Vec::with_capacity(writes.len());
    let mut rows = Vec::new();
    for w in writes {
        let Some(t) = moved.remove(&w.id) else {
            out.push(None);
            continue;
        };
        let first = t.seq - w.pieces.len() as i32 + 1;
        let events: Vec<TaskEvent> = w
            .pieces
            .iter()
            .enumerate()
            .map(|(i, piece)| {
                let mut ev = TaskEvent {
                    task_id: t.id.clone(),
                    user_id: t.user_id.clone(),
                    seq: first + i as i32,
                    status: t.status,
                    progress: t.progress,
                    step: t.step.clone(),
                    message: None,
                    at: now,
                    kind: EventKind::Progress,
                    delta: None,
                };
                match piece {
                    Piece::Text(kind, text) => {
                        ev.kind = *kind;
                        ev.delta = Some(text.clone());
                    }
                    Piece::Progress {
                        progress,
                        step,
                        message,
                    } => {
                        ev.progress = *progress;
                        ev.step = Some(step.clone());
                        ev.message = message.clone();
                    }
                }
                ev
            })
            .collect();
        rows.extend(events.iter().map(event_row));
        out.push(Some(events));
    }
    if !rows.is_empty() {
        event::Entity::insert_many(rows)
            .exec_without_returning(txn)
            .await?;
    }
    Ok(out)
}

/// One guarded update per task, then the moved tasks read back in one query.
async fn advance(
    txn: &impl ConnectionTrait,
    writes: &[ReportWrite],
) -> Result<HashMap<String, Task>, DbErr> {
    let now = Utc::now();
    let mut held = Vec::with_capacity(writes.len());
    for w in writes {
        let mut q = task::Entity::update_many()
            .col_expr(
                task::Column::Seq,
                Expr::col(task::Column::Seq).add(w.pieces.len() as i32),
            )
            .col_expr(task::Column::UpdatedAt, Expr::value(now))
            .col_expr(task::Column::HeartbeatAt, Expr::value(now))
            .filter(task::Column::Id.eq(w.id.as_str()))
            .filter(status_among(&[Status::Processing]))
            .filter(task::Column::Attempt.eq(w.attempt))
            .filter(task::Column::StepIndex.eq(w.step_index));
        if let Some((progress, step)) = w.progress() {
            q = q
                .col_expr(task::Column::Progress, Expr::value(progress))
                .col_expr(task::Column::Step, Expr::value(step));
        }
        if q.exec(txn).await?.rows_affected == 1 {
            held.push(w.id.clone());
        }
    }
    if held.is_empty() {
        return Ok(HashMap::new());
    }
    let tasks = task::Entity::find()
        .filter(task::Column::Id.is_in(held))
        .all(txn)
        .await?;
    Ok(tasks.into_iter().map(|t| (t.id.clone(), t)).collect())
}

/// [`advance`] as one statement on PostgreSQL.
async fn advance_pg(
    txn: &impl ConnectionTrait,
    writes: &[ReportWrite],
) -> Result<HashMap<String, Task>, DbErr> {
    use sea_orm::{Statement, Value};
    if writes.is_empty() {
        return Ok(HashMap::new());
    }
    let mut values: Vec<Value> = vec![Utc::now().into()];
    let mut rows = Vec::with_capacity(writes.len());
    for w in writes {
        let n = values.len();
        rows.push(format!(
            "(${}::text, ${}::int, ${}::int, ${}::int, ${}::int, ${}::text)",
            n + 1,
            n + 2,
            n + 3,
            n + 4,
            n + 5,
            n + 6
        ));
        let progress = w.progress();
        values.extend([
            w.id.clone().into(),
            w.attempt.into(),
            w.step_index.into(),
            (w.pieces.len() as i32).into(),
            progress.map(|(p, _)| p).into(),
            progress.map(|(_, s)| s.to_owned()).into(),
        ]);
    }
    let processing = status_among_sql("t.status", &[Status::Processing]);
    let sql = format!(
        "UPDATE tasks AS t SET seq = t.seq + v.n, updated_at = $1, heartbeat_at = $1, \
         progress = COALESCE(v.progress, t.progress), step = COALESCE(v.step, t.step) \
         FROM (VALUES {}) AS v(id, attempt, step_index, n, progress, step) \
         WHERE t.id = v.id AND t.attempt = v.attempt AND t.step_index = v.step_index \
         AND {processing} RETURNING t.*",
        rows.join(", ")
    );
    let tasks = task::Entity::find()
        .from_raw_sql(Statement::from_sql_and_values(
            DatabaseBackend::Postgres,
            sql,
            values,
        ))
        .all(txn)
        .await?;
    Ok(tasks.into_iter().map(|t| (t.id.clone(), t)).collect())
}
