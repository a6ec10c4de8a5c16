//! `task_waits`: a step that waits without holding a worker (its task is `WAITING`).

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "task_waits")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub task_id: String,
    /// The claim that parked the step: a check of another attempt is stale.
    pub attempt: i32,
    pub step_index: i32,
    /// `provider` (a parked job) or `approval` (a person's decision).
    pub waiting_for: String,
    /// The `[ai.providers]` name the job runs at (empty for an approval).
    pub provider: String,
    /// The provider's handle for the job.
    #[sea_orm(column_type = "Text", nullable)]
    pub job: Option<String>,
    /// The secret half of the callback (or approval link) token.
    pub token: String,
    /// Checks done so far: a check message names the count it expects, so a repeated,
    /// late or superseded one changes nothing.
    pub checks: i32,
    pub parked_at: DateTimeUtc,
    /// When the next check is due; the sweep re-sends a check overdue by much.
    pub check_at: DateTimeUtc,
    /// When a job of its provider has usually ended (`expected_secs`): one parked past
    /// it is flagged on /ops and by the `parked_overdue` alert.
    pub expected_at: DateTimeUtc,
    /// When the wait gives up: the job is canceled and the task failed (a provider
    /// job), or the step rejected (an approval).
    pub deadline_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// What a wait is for.
pub const PROVIDER: &str = "provider";
pub const APPROVAL: &str = "approval";
