//! The wait rows of `WAITING` tasks (`task_waits`) as the task's own transitions touch
//! them: a cancel removes its task's wait, the step commit removes the waits of steps
//! that finished at their provider and starts the approval waits of steps that need
//! one. Parking a step, its checks and the decisions on it are [`parked`]'s, built on
//! these rows.
//!
//! [`parked`]: crate::domains::ai_tasks::parked

use std::time::Duration;

use chrono::Utc;
use sea_orm::{ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};

use super::Task;
use crate::domains::ai_tasks::entity::wait::{self, APPROVAL};

pub use wait::Model as Wait;

/// A fresh secret for a callback or approval link: 128 random bits, hex.
pub fn new_token() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

pub async fn get(db: &impl ConnectionTrait, task_id: &str) -> Result<Option<Wait>, DbErr> {
    wait::Entity::find_by_id(task_id.to_owned()).one(db).await
}

/// Removes `task_id`'s wait (its step moved on, or its task ended).
pub async fn forget(txn: &impl ConnectionTrait, task_id: &str) -> Result<(), DbErr> {
    wait::Entity::delete_by_id(task_id.to_owned())
        .exec(txn)
        .await
        .map(drop)
}

/// Removes the waits of `ids` (steps that finished at their provider), one statement.
pub async fn forget_many(txn: &impl ConnectionTrait, ids: &[&str]) -> Result<(), DbErr> {
    if ids.is_empty() {
        return Ok(());
    }
    wait::Entity::delete_many()
        .filter(wait::Column::TaskId.is_in(ids.iter().map(|id| (*id).to_owned())))
        .exec(txn)
        .await
        .map(drop)
}

/// Starts the approval waits of tasks whose next step needs one (in the transaction
/// that committed the step before): `t` as it is now (at the gated step), and how long
/// the approval may take.
pub async fn wait_for_approvals(
    txn: &impl ConnectionTrait,
    gated: &[(&Task, Duration)],
) -> Result<(), DbErr> {
    if gated.is_empty() {
        return Ok(());
    }
    let now = Utc::now();
    let rows = gated.iter().map(|(t, timeout)| {
        let deadline = now + chrono::Duration::from_std(*timeout).unwrap_or_default();
        wait::ActiveModel {
            task_id: Set(t.id.clone()),
            attempt: Set(t.attempt),
            step_index: Set(t.step_index),
            waiting_for: Set(APPROVAL.into()),
            provider: Set(String::new()),
            job: Set(None),
            token: Set(new_token()),
            checks: Set(0),
            parked_at: Set(now),
            // The sweep sends the timeout's check when it is due.
            check_at: Set(deadline),
            expected_at: Set(deadline),
            deadline_at: Set(deadline),
        }
    });
    wait::Entity::insert_many(rows)
        .exec_without_returning(txn)
        .await
        .map(drop)
}
