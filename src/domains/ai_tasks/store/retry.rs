//! One-click retry: a task that FAILED (or was CANCELED before it started) is tried again
//! as a new task that names it (`retry_of`), reserves its credits again and starts at the
//! step that failed, with the outputs of the steps before it: the work already paid for
//! is not done twice. A task is retried at most once (a unique index): a second click
//! answers the retry the first one made.

#[allow(unused_imports)]
use super::*;
use sea_orm::TransactionTrait;
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, SqlErr};

use crate::domains::ai_tasks::entity::task;
use crate::domains::ai_tasks::kinds::Status;
use crate::domains::ai_tasks::messages::TaskEvent;

/// What a retry came to.
#[derive(Debug)]
pub enum Retried {
    /// A new task, and its first event (to announce).
    Made(Task, TaskEvent),
    /// The task had been retried already: its retry.
    Before(Task),
    /// It cannot be retried: why.
    Refused(&'static str),
}

/// Where a retry of `t` starts, if it may be retried.
pub fn resume_of(t: &Task) -> Result<Resume, &'static str> {
    let from = match t.status {
        Status::Failed => t.step_index.clamp(0, t.kind.steps().len() as i32 - 1),
        Status::Canceled if t.started_at.is_none() => 0,
        Status::Canceled => {
            return Err("a task canceled after it started is not retried (submit it again)");
        }
        _ => return Err("only a FAILED task (or one CANCELED before it started) is retried"),
    };
    Ok(Resume {
        retry_of: t.id.clone(),
        step_index: from,
        // The earlier steps' outputs; a retry from the first step starts clean.
        result: (from > 0).then(|| t.result.clone()).flatten(),
    })
}

async fn retry_of(db: &impl sea_orm::ConnectionTrait, id: &str) -> Result<Option<Task>, DbErr> {
    task::Entity::find()
        .filter(task::Column::RetryOf.eq(id))
        .one(db)
        .await
}

/// Retries `t` (its owner's, checked by the caller): the same kind, prompt, params,
/// metadata and cost, for the same owner, under the owner's standing now (tenant, plan)
/// and `max_in_flight` (the tenant's cap).
pub async fn retry(
    db: &DatabaseConnection,
    t: &Task,
    standing: &crate::plans::Standing,
    max_in_flight: u32,
    max_payload: usize,
) -> Result<Retried, StoreError> {
    if let Some(before) = retry_of(db, &t.id).await? {
        return Ok(Retried::Before(before));
    }
    let resume = match resume_of(t) {
        Ok(r) => r,
        Err(why) => return Ok(Retried::Refused(why)),
    };
    let new = NewTask {
        user_id: t.user_id.clone(),
        tenant_id: standing.tenant_id.clone(),
        plan: standing.plan.clone(),
        kind: t.kind,
        prompt: t.prompt.clone(),
        params: serde_json::from_str(&t.params).unwrap_or_default(),
        cost: t.cost,
        max_in_flight,
        resume: Some(resume),
        metadata: t
            .metadata
            .as_deref()
            .and_then(|m| serde_json::from_str(m).ok()),
        trace: crate::traces::current(),
    };
    let txn = db.begin().await?;
    match submit(&txn, &new, max_payload).await {
        Ok((task, event)) => {
            txn.commit().await?;
            Ok(Retried::Made(task, event))
        }
        // Two clicks at once: the other one's retry stands.
        Err(StoreError::Db(e))
            if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) =>
        {
            txn.rollback().await?;
            match retry_of(db, &t.id).await? {
                Some(before) => Ok(Retried::Before(before)),
                None => Err(StoreError::Db(e)),
            }
        }
        Err(e) => Err(e),
    }
}
