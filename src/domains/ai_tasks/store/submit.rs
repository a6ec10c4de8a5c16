//! Submissions: tasks written in batches under the in-flight cap and the credit check,
//! each with its first run message (the outbox) in the same transaction.

#[allow(unused_imports)]
use super::*;
use chrono::Utc;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect};

use crate::broker::{Envelope, Target};
use crate::domains::ai_tasks::entity::{event, task};
use crate::domains::ai_tasks::kinds::{Status, TaskKind};
use crate::domains::ai_tasks::messages::{RUN_STEP, RunStep, TaskEvent};
use crate::outbox::{self, OutboxError};
use crate::users::credits;

/// One task submission.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub user_id: String,
    /// Whose share and limits it counts against (the organisation, else the user; empty:
    /// the user).
    pub tenant_id: String,
    /// The plan it is submitted under (empty: `free`).
    pub plan: String,
    pub kind: TaskKind,
    pub prompt: String,
    pub params: serde_json::Value,
    pub cost: i64,
    /// The tenant's cap on tasks PENDING, PROCESSING or RETRYING (0: none), checked in
    /// the submission's transaction.
    pub max_in_flight: u32,
    /// A retry: where the task it retries left off.
    pub resume: Option<Resume>,
    /// The client's metadata.
    pub metadata: Option<crate::domains::ai_tasks::metadata::Metadata>,
    /// The submitting request's `traceparent` (traces on): its run joins that trace,
    /// whichever transaction writes it.
    pub trace: Option<String>,
}

/// Where a retry starts: the step that failed, with the outputs of the steps before it.
#[derive(Debug, Clone)]
pub struct Resume {
    pub retry_of: String,
    pub step_index: i32,
    /// The earlier steps' outputs (the retried task's result as it was).
    pub result: Option<String>,
}

impl NewTask {
    fn tenant(&self) -> &str {
        if self.tenant_id.is_empty() {
            &self.user_id
        } else {
            &self.tenant_id
        }
    }
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

/// Per submission: `Some(cap)` when its tenant already has `cap` tasks PENDING,
/// PROCESSING or RETRYING, the batch's earlier submissions included. The capped tenants'
/// rows are locked first (users, then organisations, each in id order, like every
/// reservation), so concurrent transactions of one tenant count one after the other: the
/// lock is held to the commit, and the next count starts after it and sees the committed
/// tasks.
async fn over_cap(
    txn: &impl ConnectionTrait,
    batch: &[NewTask],
) -> Result<Vec<Option<u32>>, DbErr> {
    let ids: std::collections::BTreeSet<&str> = batch
        .iter()
        .filter(|n| n.max_in_flight > 0)
        .map(|n| n.tenant())
        .collect();
    if ids.is_empty() {
        return Ok(vec![None; batch.len()]);
    }
    // Every lock of a submission in one order: the submitters' rows (which the credit
    // reservation locks too, before or after this) in id order, then the organisations'.
    // An organisation's row first would deadlock against a batch that reserved credits
    // (users first) before counting.
    let users: std::collections::BTreeSet<&str> = batch
        .iter()
        .filter(|n| n.max_in_flight > 0)
        .map(|n| n.user_id.as_str())
        .chain(ids.iter().copied())
        .collect();
    crate::users::lock_many(txn, &users).await?;
    crate::users::orgs::lock_many(txn, &ids).await?;
    let mut active: std::collections::HashMap<String, i64> = task::Entity::find()
        .select_only()
        .column(task::Column::TenantId)
        .column_as(task::Column::Id.count(), "n")
        .filter(task::Column::TenantId.is_in(ids))
        .filter(task::Column::Status.is_in(Status::ACTIVE))
        .group_by(task::Column::TenantId)
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
            let count = active.entry(n.tenant().to_owned()).or_default();
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
    let mut tags = Vec::new();
    for (n, admitted) in batch.iter().zip(admitted) {
        if let Err(refused) = admitted {
            results.push(Err(refused));
            continue;
        }
        let from = n.resume.as_ref().map_or(0, |r| r.step_index);
        let params = n.params.to_string();
        let lane = crate::domains::ai_tasks::kinds::Lane::of(&params);
        let queue = n.kind.queue_in(from, lane);
        let t = task::Model {
            id: uuid::Uuid::now_v7().to_string(),
            tenant_id: n.tenant().to_owned(),
            plan: if n.plan.is_empty() {
                crate::plans::FREE.to_owned()
            } else {
                n.plan.clone()
            },
            lane: queue.key.to_owned(),
            trace_id: n
                .trace
                .as_deref()
                .and_then(crate::traces::trace_id)
                .map(str::to_owned),
            user_id: n.user_id.clone(),
            kind: n.kind,
            prompt: n.prompt.clone(),
            params,
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
            retry_of: n.resume.as_ref().map(|r| r.retry_of.clone()),
            metadata: n
                .metadata
                .as_ref()
                .filter(|m| !m.is_empty())
                .and_then(|m| serde_json::to_string(m).ok()),
        };
        if let Some(m) = &n.metadata {
            tags.extend(crate::domains::ai_tasks::metadata::rows(
                &t.id, &t.user_id, m,
            ));
        }
        let t = task::Model {
            step_index: from,
            result: n.resume.as_ref().and_then(|r| r.result.clone()),
            ..t
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
        messages.push((
            Target::Queue(queue),
            run_message(&t, from).in_trace(n.trace.as_deref()),
        ));
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
        if !tags.is_empty() {
            crate::domains::ai_tasks::entity::metadata::Entity::insert_many(tags)
                .exec_without_returning(txn)
                .await?;
        }
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

pub(super) fn run_message(t: &Task, step: i32) -> Envelope {
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
        Target::Queue(
            t.kind
                .queue_in(step, crate::domains::ai_tasks::kinds::Lane::of(&t.params)),
        ),
        &run_message(t, step),
        max_payload,
    )
    .await
}
