//! On PostgreSQL, the tasks' status index holds only the tasks that are not finished
//! (`(status, heartbeat_at) WHERE status IN ('PENDING', 'PROCESSING', 'RETRYING')`),
//! and failures get a small index of their own for the ops board.
//!
//! Every task passes through PENDING and PROCESSING and ends in a terminal status, so
//! the full `(status, heartbeat_at)` index held a row per task ever run and, between
//! vacuums, a dead entry per transition in its active region. The planner estimates
//! the active statuses from statistics dominated by finished tasks (a handful of rows)
//! and took that index for the claims' `status IN (…)` guard instead of the primary
//! key: ~2 ms per claim of 16 tasks in the end-to-end bench, the largest statement
//! there. Partial, it stays the size of the work in flight (a finished task leaves it,
//! with no index write for its last update), so the same plan costs what the work in
//! flight costs. The reaper (PROCESSING, stale heartbeat), the ops board (active and
//! waiting counts, oldest active) and the claim guards use it as before.
//!
//! MariaDB has no partial indexes and SQLite's planner does not prove `=` implies
//! `IN (…)`: both keep the full index.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tasks {
    Table,
    Status,
    HeartbeatAt,
    UpdatedAt,
}

const FULL: &str = "idx_tasks_status_heartbeat";
const ACTIVE: &str = "idx_tasks_active";
const FAILED: &str = "idx_tasks_failed";

fn postgres(manager: &SchemaManager) -> bool {
    manager.get_database_backend() == sea_orm::DatabaseBackend::Postgres
}

fn drop(name: &str) -> IndexDropStatement {
    Index::drop().name(name).table(Tasks::Table).to_owned()
}

fn status_heartbeat(name: &str) -> IndexCreateStatement {
    Index::create()
        .name(name)
        .table(Tasks::Table)
        .col(Tasks::Status)
        .col(Tasks::HeartbeatAt)
        .to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if !postgres(manager) {
            return Ok(());
        }
        manager
            .create_index(
                status_heartbeat(ACTIVE)
                    .and_where(Expr::col(Tasks::Status).is_in([
                        "PENDING",
                        "PROCESSING",
                        "RETRYING",
                    ]))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(FAILED)
                    .table(Tasks::Table)
                    .col(Tasks::UpdatedAt)
                    .and_where(Expr::col(Tasks::Status).eq("FAILED"))
                    .to_owned(),
            )
            .await?;
        manager.drop_index(drop(FULL)).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if !postgres(manager) {
            return Ok(());
        }
        manager.create_index(status_heartbeat(FULL)).await?;
        manager.drop_index(drop(FAILED)).await?;
        manager.drop_index(drop(ACTIVE)).await
    }
}
