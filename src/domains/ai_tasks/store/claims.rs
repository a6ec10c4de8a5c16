//! Claims: the steps of a batch leased in one transaction.

#[allow(unused_imports)]
use super::*;
use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, TransactionTrait,
};

use crate::domains::ai_tasks::entity::{event, task};
use crate::domains::ai_tasks::kinds::Status;
use crate::domains::ai_tasks::messages::TaskEvent;

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
