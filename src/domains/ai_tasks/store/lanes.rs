//! Lanes: the line a task waits in (the queue of its first step). What the fair-share
//! rule counts at claim time (who runs how much, who waits) and what a waiting task is
//! told (its place in line, the lane's recent pace).

#[allow(unused_imports)]
use super::*;
use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, PaginatorTrait as _, QueryFilter, QuerySelect,
};

use crate::domains::ai_tasks::entity::task;
use crate::domains::ai_tasks::kinds::Status;

/// Tasks PROCESSING in `lane`, by tenant: one grouped count over the lane's running
/// work (bounded by the consumers' slots, whatever the backlog).
pub async fn running_by_tenant(
    db: &impl ConnectionTrait,
    lane: &str,
) -> Result<HashMap<String, u64>, DbErr> {
    let rows: Vec<(String, i64)> = task::Entity::find()
        .select_only()
        .column(task::Column::TenantId)
        .column_as(task::Column::Id.count(), "n")
        .filter(task::Column::Lane.eq(lane))
        .filter(task::Column::Status.eq(Status::Processing))
        .group_by(task::Column::TenantId)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(t, n)| (t, u64::try_from(n).unwrap_or(0)))
        .collect())
}

/// The tenants with PENDING work in `lane`, each with the plans it waits under (a
/// tenant whose plan changed may wait under two).
pub async fn waiting_tenants(
    db: &impl ConnectionTrait,
    lane: &str,
) -> Result<Vec<(String, String)>, DbErr> {
    task::Entity::find()
        .select_only()
        .column(task::Column::TenantId)
        .column(task::Column::Plan)
        .filter(task::Column::Lane.eq(lane))
        .filter(task::Column::Status.eq(Status::Pending))
        .group_by(task::Column::TenantId)
        .group_by(task::Column::Plan)
        .into_tuple()
        .all(db)
        .await
}

/// Where a PENDING task stands: the tasks of its tenant in its lane PENDING before it
/// (a UUIDv7 id orders by submission), and of every tenant.
pub async fn ahead_of(db: &impl ConnectionTrait, t: &Task) -> Result<(u64, u64), DbErr> {
    let ahead = task::Entity::find()
        .filter(task::Column::Lane.eq(t.lane.as_str()))
        .filter(task::Column::Status.eq(Status::Pending))
        .filter(task::Column::Id.lt(t.id.as_str()));
    let own = ahead
        .clone()
        .filter(task::Column::TenantId.eq(t.tenant_id.as_str()))
        .count(db)
        .await?;
    Ok((own, ahead.count(db).await?))
}

/// Starts in `lane` (of `tenant`, when given) since `since`: how many, and the first.
pub async fn starts_since(
    db: &impl ConnectionTrait,
    lane: &str,
    tenant: Option<&str>,
    since: DateTime<Utc>,
) -> Result<(u64, Option<DateTime<Utc>>), DbErr> {
    let mut q = task::Entity::find()
        .filter(task::Column::Lane.eq(lane))
        .filter(task::Column::StartedAt.gt(crate::db::utc_value(db, since)));
    if let Some(t) = tenant {
        q = q.filter(task::Column::TenantId.eq(t));
    }
    let row: Option<(i64, Option<DateTime<Utc>>)> = q
        .select_only()
        .column_as(task::Column::Id.count(), "n")
        .column_as(task::Column::StartedAt.min(), "first")
        .into_tuple()
        .one(db)
        .await?;
    Ok(row
        .map(|(n, first)| (u64::try_from(n).unwrap_or(0), first))
        .unwrap_or((0, None)))
}

/// A tenant's tasks in any of `statuses` (its use of a cap, for `GET /v1/me`).
pub async fn count_of_tenant(
    db: &impl ConnectionTrait,
    tenant: &str,
    statuses: &[Status],
) -> Result<u64, DbErr> {
    task::Entity::find()
        .filter(task::Column::TenantId.eq(tenant))
        .filter(task::Column::Status.is_in(statuses.iter().copied()))
        .count(db)
        .await
}

/// One tenant's PENDING work in one lane, for the ops console.
#[derive(Debug, Clone)]
pub struct Waiting {
    pub tenant_id: String,
    pub plan: String,
    pub lane: String,
    pub count: u64,
    pub oldest: DateTime<Utc>,
}

/// The `n` tenants with the most PENDING work in a lane, most first.
pub async fn most_waiting(db: &impl ConnectionTrait, n: u64) -> Result<Vec<Waiting>, DbErr> {
    use sea_orm::QueryOrder as _;
    let rows: Vec<(String, String, String, i64, DateTime<Utc>)> = task::Entity::find()
        .select_only()
        .column(task::Column::TenantId)
        .column(task::Column::Plan)
        .column(task::Column::Lane)
        .column_as(task::Column::Id.count(), "n")
        .column_as(task::Column::CreatedAt.min(), "oldest")
        .filter(task::Column::Status.eq(Status::Pending))
        .group_by(task::Column::TenantId)
        .group_by(task::Column::Plan)
        .group_by(task::Column::Lane)
        .order_by_desc(sea_orm::sea_query::Expr::cust("n"))
        .limit(n)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(tenant_id, plan, lane, count, oldest)| Waiting {
            tenant_id,
            plan,
            lane,
            count: u64::try_from(count).unwrap_or(0),
            oldest,
        })
        .collect())
}

/// A tenant's PROCESSING tasks in its busiest lane (its use of a per-lane cap).
pub async fn running_in_busiest_lane(
    db: &impl ConnectionTrait,
    tenant: &str,
) -> Result<u64, DbErr> {
    let rows: Vec<(String, i64)> = task::Entity::find()
        .select_only()
        .column(task::Column::Lane)
        .column_as(task::Column::Id.count(), "n")
        .filter(task::Column::TenantId.eq(tenant))
        .filter(task::Column::Status.eq(Status::Processing))
        .group_by(task::Column::Lane)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(_, n)| u64::try_from(n).ok())
        .max()
        .unwrap_or(0))
}
