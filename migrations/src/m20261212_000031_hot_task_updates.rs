//! On PostgreSQL, a running task's own writes (its stream reports, progress and lease
//! heartbeats: many a second per task while text streams) become HOT updates, and a
//! finished task stops paying for indexes that only ever read work under way (issue 63).
//!
//! PostgreSQL rewrites every index of a row on an update unless no indexed column
//! changed and the new version fits on the same page (a heap-only tuple). A report sets
//! `seq`, `progress`, `updated_at` and `heartbeat_at`; the last two were indexed
//! (`idx_tasks_active` on `(status, heartbeat_at)`, `idx_tasks_failed` on `updated_at`),
//! so each report wrote a new entry into all eight indexes of `tasks`: at 1,000 streams,
//! ~20,000 reports a second, ~160,000 index entries a second for rows that moved nothing
//! an index orders by. Now:
//!
//! - `idx_tasks_active` is `(status)` over the tasks not finished: the reaper's stale-lease
//!   scan reads the PROCESSING entries (the work in flight, not history) and checks the
//!   heartbeat on the row.
//! - `idx_tasks_failed` orders failures by `finished_at` (set once, when the task fails).
//! - `tasks` leaves 15 % of each page free (`fillfactor = 85`), room for the new version of
//!   a row on its own page, which a HOT update needs.
//!
//! And for every task's status changes (never HOT: the status is indexed), indexes that
//! held a row per version of every task ever run hold only what their readers read:
//! `idx_tasks_user_status` the unfinished tasks (its reader counts a user's work under
//! way), `ux_tasks_retry_of` the tasks made by a retry (NULLs were indexed, one entry per
//! version of every task), `idx_task_events_kind_created` the streamed-text events its
//! trim deletes (status and progress events stay with their task and are never trimmed).
//!
//! MariaDB and SQLite have no partial indexes (and InnoDB updates secondary indexes only
//! for the columns that changed): nothing changes there.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden, Clone, Copy)]
enum Tasks {
    Table,
    Status,
    HeartbeatAt,
    UpdatedAt,
    FinishedAt,
    UserId,
    RetryOf,
}

#[derive(DeriveIden)]
enum TaskEvents {
    Table,
    Kind,
    CreatedAt,
}

const ACTIVE: &str = "idx_tasks_active";
const FAILED: &str = "idx_tasks_failed";
const USER_STATUS: &str = "idx_tasks_user_status";
const RETRY_OF: &str = "ux_tasks_retry_of";
const TEXT_EVENTS: &str = "idx_task_events_kind_created";

/// The statuses of a task not finished (`Status::ACTIVE`; `idx_tasks_active` has held
/// them since `task_waits`).
const UNFINISHED: [&str; 4] = ["PENDING", "PROCESSING", "RETRYING", "WAITING"];

fn postgres(manager: &SchemaManager) -> bool {
    manager.get_database_backend() == sea_orm::DatabaseBackend::Postgres
}

fn drop_task_index(name: &str) -> IndexDropStatement {
    Index::drop().name(name).table(Tasks::Table).to_owned()
}

fn task_index(name: &str, cols: &[Tasks]) -> IndexCreateStatement {
    let mut index = Index::create();
    index.name(name).table(Tasks::Table);
    for c in cols {
        index.col(*c);
    }
    index.to_owned()
}

/// The text-events index, whole or (`partial`) only over what the trim deletes.
fn text_events(partial: bool) -> IndexCreateStatement {
    let mut index = Index::create();
    index
        .name(TEXT_EVENTS)
        .table(TaskEvents::Table)
        .col(TaskEvents::Kind)
        .col(TaskEvents::CreatedAt);
    if partial {
        index.and_where(Expr::col(TaskEvents::Kind).is_in(["delta", "reset"]));
    }
    index.to_owned()
}

async fn set_fillfactor(manager: &SchemaManager<'_>, percent: u8) -> Result<(), DbErr> {
    manager
        .get_connection()
        .execute_unprepared(&format!("ALTER TABLE tasks SET (fillfactor = {percent})"))
        .await
        .map(|_| ())
}

/// The four task indexes this migration changes, as they are after it (`hot`) or before.
fn task_indexes(hot: bool) -> [IndexCreateStatement; 4] {
    let status = |c: &[&str]| Expr::col(Tasks::Status).is_in(c.iter().copied());
    let failed = || Expr::col(Tasks::Status).eq("FAILED");
    if hot {
        [
            task_index(ACTIVE, &[Tasks::Status])
                .and_where(status(&UNFINISHED))
                .to_owned(),
            task_index(FAILED, &[Tasks::FinishedAt])
                .and_where(failed())
                .to_owned(),
            task_index(USER_STATUS, &[Tasks::UserId, Tasks::Status])
                .and_where(status(&UNFINISHED))
                .to_owned(),
            task_index(RETRY_OF, &[Tasks::RetryOf])
                .unique()
                .and_where(Expr::col(Tasks::RetryOf).is_not_null())
                .to_owned(),
        ]
    } else {
        [
            task_index(ACTIVE, &[Tasks::Status, Tasks::HeartbeatAt])
                .and_where(status(&UNFINISHED))
                .to_owned(),
            task_index(FAILED, &[Tasks::UpdatedAt])
                .and_where(failed())
                .to_owned(),
            task_index(USER_STATUS, &[Tasks::UserId, Tasks::Status]),
            task_index(RETRY_OF, &[Tasks::RetryOf]).unique().to_owned(),
        ]
    }
}

/// Replaces the indexes and the fillfactor with their state after (`hot`) or before.
async fn apply(manager: &SchemaManager<'_>, hot: bool) -> Result<(), DbErr> {
    if !postgres(manager) {
        return Ok(());
    }
    for name in [ACTIVE, FAILED, USER_STATUS, RETRY_OF] {
        manager.drop_index(drop_task_index(name)).await?;
    }
    for index in task_indexes(hot) {
        manager.create_index(index).await?;
    }
    manager
        .drop_index(
            Index::drop()
                .name(TEXT_EVENTS)
                .table(TaskEvents::Table)
                .to_owned(),
        )
        .await?;
    manager.create_index(text_events(hot)).await?;
    set_fillfactor(manager, if hot { 85 } else { 100 }).await
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        apply(manager, true).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        apply(manager, false).await
    }
}
