//! Tables of the AI-task flow.

pub mod task {
    use sea_orm::entity::prelude::*;

    use crate::domains::ai_tasks::kinds::{Status, TaskKind};

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "tasks")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub user_id: String,
        pub kind: TaskKind,
        #[sea_orm(column_type = "Text")]
        pub prompt: String,
        /// JSON object.
        #[sea_orm(column_type = "Text")]
        pub params: String,
        pub status: Status,
        /// Fencing token: incremented by every claim; only the holder may commit.
        pub attempt: i32,
        /// Index of the pipeline step to run next (0 for single-step kinds).
        pub step_index: i32,
        pub step: Option<String>,
        pub progress: i32,
        /// Sequence number of the last event.
        pub seq: i32,
        /// Credits reserved at submit.
        pub cost: i64,
        #[sea_orm(column_type = "Text", nullable)]
        pub result: Option<String>,
        #[sea_orm(column_type = "Text", nullable)]
        pub error: Option<String>,
        /// Lease: refreshed while a consumer works on the task; NULL when nobody holds it.
        pub heartbeat_at: Option<DateTimeUtc>,
        pub created_at: DateTimeUtc,
        pub updated_at: DateTimeUtc,
        pub started_at: Option<DateTimeUtc>,
        pub finished_at: Option<DateTimeUtc>,
        /// The task this one retries (`POST /v1/tasks/{id}/retry`); unique.
        pub retry_of: Option<String>,
        /// The client's metadata: a flat JSON object of strings.
        #[sea_orm(column_type = "Text", nullable)]
        pub metadata: Option<String>,
        /// Whose share and limits it counts against: the organisation, else the user.
        pub tenant_id: String,
        /// The plan it was submitted under (its weight at claim time).
        pub plan: String,
        /// The queue of its first step (`ai.short`): the line it waits in.
        pub lane: String,
        /// The trace of its run (traces on): the submitting request's.
        pub trace_id: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod event {
    use sea_orm::entity::prelude::*;

    use crate::domains::ai_tasks::kinds::Status;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "task_events")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub task_id: String,
        pub seq: i32,
        pub status: Status,
        pub progress: i32,
        pub step: Option<String>,
        #[sea_orm(column_type = "Text", nullable)]
        pub message: Option<String>,
        pub created_at: DateTimeUtc,
        /// `progress`, `delta` (a piece of streamed text) or `reset` (discard the text of
        /// earlier attempts).
        pub kind: String,
        #[sea_orm(column_type = "Text", nullable)]
        pub delta: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// A task's metadata, one row per key: what a search by key and value finds.
pub mod metadata {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "task_metadata")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub task_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub key: String,
        pub user_id: String,
        pub value: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// `task_waits`: a step that waits without holding a worker (its task is `WAITING`): a
/// job parked at its provider, or a person's approval (see `parked`).
pub mod wait {
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
}
