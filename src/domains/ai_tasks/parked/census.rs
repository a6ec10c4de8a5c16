//! What waits, for operators: parked jobs and approvals by provider, how old the oldest
//! is, and how many have waited past their provider's usual time (`expected_secs`).
//! Read by the ops panel (with the `parked_overdue` alert's conditions) and the gauges.

use chrono::{DateTime, Utc};
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QuerySelect};

use crate::domains::ai_tasks::entity::wait;

/// The alert a provider whose jobs stay parked past their expected time raises.
pub const PARKED_OVERDUE: &str = "parked_overdue";

/// The waits of one provider (empty for approvals).
#[derive(Debug, Clone, PartialEq)]
pub struct Census {
    pub waiting_for: String,
    pub provider: String,
    pub count: i64,
    pub oldest: DateTime<Utc>,
    /// Waiting past their expected end.
    pub overdue: i64,
}

/// Every kind of wait, by provider: two grouped reads of a table the size of the work
/// waiting.
pub async fn census(db: &DatabaseConnection) -> Result<Vec<Census>, DbErr> {
    let all: Vec<(String, String, i64, DateTime<Utc>)> = wait::Entity::find()
        .select_only()
        .column(wait::Column::WaitingFor)
        .column(wait::Column::Provider)
        .column_as(wait::Column::TaskId.count(), "n")
        .column_as(wait::Column::ParkedAt.min(), "oldest")
        .group_by(wait::Column::WaitingFor)
        .group_by(wait::Column::Provider)
        .into_tuple()
        .all(db)
        .await?;
    let late: Vec<(String, String, i64)> = wait::Entity::find()
        .select_only()
        .column(wait::Column::WaitingFor)
        .column(wait::Column::Provider)
        .column_as(wait::Column::TaskId.count(), "n")
        .filter(wait::Column::ExpectedAt.lt(Utc::now()))
        .group_by(wait::Column::WaitingFor)
        .group_by(wait::Column::Provider)
        .into_tuple()
        .all(db)
        .await?;
    Ok(all
        .into_iter()
        .map(|(waiting_for, provider, count, oldest)| {
            let overdue = late
                .iter()
                .find(|(w, p, _)| *w == waiting_for && *p == provider)
                .map_or(0, |(_, _, n)| *n);
            Census {
                waiting_for,
                provider,
                count,
                oldest,
                overdue,
            }
        })
        .collect())
}
