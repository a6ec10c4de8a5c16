//! Finding tasks by what they are and what they carry: owner, kind, status, creation
//! time and a metadata key/value (through `task_metadata`'s indexes), newest first or
//! oldest first, paged by id.

#[allow(unused_imports)]
use super::*;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Query;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, PaginatorTrait as _, QueryFilter, QueryOrder,
    QuerySelect, Select,
};

use crate::domains::ai_tasks::entity::{metadata, task};
use crate::domains::ai_tasks::kinds::{Status, TaskKind};

/// Which tasks; `None` matches all.
#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    pub user_id: Option<String>,
    /// Any of these; empty: every status.
    pub statuses: Vec<Status>,
    pub kind: Option<TaskKind>,
    /// Created at or after / before.
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// A metadata key and its value.
    pub metadata: Option<(String, String)>,
    /// Only tasks no retry was made of (a bulk retry's filter).
    pub not_retried: bool,
}

fn filtered(f: &TaskFilter) -> Select<task::Entity> {
    let mut q = task::Entity::find();
    if let Some(u) = &f.user_id {
        q = q.filter(task::Column::UserId.eq(u.as_str()));
    }
    if !f.statuses.is_empty() {
        q = q.filter(task::Column::Status.is_in(f.statuses.clone()));
    }
    if let Some(k) = f.kind {
        q = q.filter(task::Column::Kind.eq(k));
    }
    if let Some(t) = f.since {
        q = q.filter(task::Column::CreatedAt.gte(t));
    }
    if let Some(t) = f.until {
        q = q.filter(task::Column::CreatedAt.lt(t));
    }
    if let Some((k, v)) = &f.metadata {
        let mut tagged = Query::select();
        tagged
            .column(metadata::Column::TaskId)
            .from(metadata::Entity)
            .and_where(metadata::Column::Key.eq(k.as_str()))
            .and_where(metadata::Column::Value.eq(v.as_str()));
        if let Some(u) = &f.user_id {
            tagged.and_where(metadata::Column::UserId.eq(u.as_str()));
        }
        q = q.filter(task::Column::Id.in_subquery(tagged.to_owned()));
    }
    if f.not_retried {
        let retried = Query::select()
            .column(task::Column::RetryOf)
            .from(task::Entity)
            .and_where(task::Column::RetryOf.is_not_null())
            .to_owned();
        q = q.filter(task::Column::Id.not_in_subquery(retried));
    }
    q
}

/// Tasks matching `f`: newest first below `cursor`, or oldest first above it.
pub async fn search(
    db: &impl ConnectionTrait,
    f: &TaskFilter,
    cursor: Option<&str>,
    limit: u64,
    oldest_first: bool,
) -> Result<Vec<Task>, DbErr> {
    let mut q = filtered(f).limit(limit);
    q = if oldest_first {
        if let Some(c) = cursor {
            q = q.filter(task::Column::Id.gt(c));
        }
        q.order_by_asc(task::Column::Id)
    } else {
        if let Some(c) = cursor {
            q = q.filter(task::Column::Id.lt(c));
        }
        q.order_by_desc(task::Column::Id)
    };
    q.all(db).await
}

/// How many tasks match `f`.
pub async fn count(db: &impl ConnectionTrait, f: &TaskFilter) -> Result<u64, DbErr> {
    filtered(f).count(db).await
}
