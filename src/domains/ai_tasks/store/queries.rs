//! Reads: tasks by id, a user's tasks page by page, events after a sequence number,
//! stale leases.

#[allow(unused_imports)]
use super::*;
use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};

use crate::domains::ai_tasks::entity::{event, task};
use crate::domains::ai_tasks::kinds::{Status, TaskKind};

/// Tasks by id (a batch of step messages), in no particular order.
pub async fn get_many(db: &impl ConnectionTrait, ids: &[&str]) -> Result<Vec<Task>, DbErr> {
    task::Entity::find()
        .filter(task::Column::Id.is_in(ids.iter().map(|id| (*id).to_owned())))
        .all(db)
        .await
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
