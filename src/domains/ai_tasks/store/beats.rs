//! Lease heartbeats of many running steps at once: one update refreshes every lease of
//! the batch still held (by its attempt, while PROCESSING) and one read tells which
//! were, instead of one autocommitted update per task per second, each waiting for its
//! own log flush while holding the task's row.

#[allow(unused_imports)]
use super::*;

use chrono::Utc;
use sea_orm::sea_query::{Expr, ExprTrait as _};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect};

use crate::domains::ai_tasks::entity::task;
use crate::domains::ai_tasks::kinds::Status;

/// Refreshes the leases `(task, attempt)`; per lease, in order, whether it is still held
/// (the task is PROCESSING under that attempt).
pub async fn beat(
    txn: &impl ConnectionTrait,
    leases: &[(String, i32)],
) -> Result<Vec<bool>, DbErr> {
    if leases.is_empty() {
        return Ok(Vec::new());
    }
    let ids = || leases.iter().map(|(id, _)| id.clone());
    let pairs = leases.iter().map(|(id, attempt)| {
        sea_orm::sea_query::ValueTuple::Two(id.clone().into(), (*attempt).into())
    });
    task::Entity::update_many()
        .col_expr(task::Column::HeartbeatAt, Expr::value(Utc::now()))
        .filter(task::Column::Id.is_in(ids()))
        .filter(
            Expr::tuple([
                Expr::col(task::Column::Id),
                Expr::col(task::Column::Attempt),
            ])
            .in_tuples(pairs),
        )
        .filter(status_among(&[Status::Processing]))
        .exec(txn)
        .await?;
    let now: Vec<(String, i32, Status)> = task::Entity::find()
        .select_only()
        .column(task::Column::Id)
        .column(task::Column::Attempt)
        .column(task::Column::Status)
        .filter(task::Column::Id.is_in(ids()))
        .into_tuple()
        .all(txn)
        .await?;
    Ok(leases
        .iter()
        .map(|(id, attempt)| {
            now.iter()
                .any(|(i, a, s)| i == id && a == attempt && *s == Status::Processing)
        })
        .collect())
}
