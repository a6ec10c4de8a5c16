//! `task_waits`: a step that waits without holding a worker. A provider job parked
//! (`waiting_for = 'provider'`: the provider's job handle, the next check, the checks so
//! far, the callback token, when its provider's jobs usually end) or a step waiting for a person's approval (`'approval'`:
//! the decision's deadline). The task itself is `WAITING`; this row is the truth a lost
//! delay message is rebuilt from (the sweep reads `check_at`).
//!
//! On PostgreSQL the partial index of unfinished tasks takes `WAITING` in too, so
//! in-flight counts that name it keep using it.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TaskWaits {
    Table,
    TaskId,
    Attempt,
    StepIndex,
    WaitingFor,
    Provider,
    Job,
    Token,
    Checks,
    ParkedAt,
    CheckAt,
    ExpectedAt,
    DeadlineAt,
}

#[derive(DeriveIden)]
enum Tasks {
    Table,
    Status,
    HeartbeatAt,
}

const ACTIVE: &str = "idx_tasks_active";

fn active(statuses: &[&str]) -> IndexCreateStatement {
    Index::create()
        .name(ACTIVE)
        .table(Tasks::Table)
        .col(Tasks::Status)
        .col(Tasks::HeartbeatAt)
        .and_where(Expr::col(Tasks::Status).is_in(statuses.iter().copied()))
        .to_owned()
}

fn drop_active() -> IndexDropStatement {
    Index::drop().name(ACTIVE).table(Tasks::Table).to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(TaskWaits::Table)
                    .if_not_exists()
                    .col(string_len(TaskWaits::TaskId, 64).primary_key())
                    .col(integer(TaskWaits::Attempt))
                    .col(integer(TaskWaits::StepIndex))
                    .col(string_len(TaskWaits::WaitingFor, 16))
                    .col(string_len(TaskWaits::Provider, 64))
                    .col(text_null(TaskWaits::Job))
                    .col(string_len(TaskWaits::Token, 64))
                    .col(integer(TaskWaits::Checks))
                    .col(timestamp_with_time_zone(TaskWaits::ParkedAt))
                    .col(timestamp_with_time_zone(TaskWaits::CheckAt))
                    .col(timestamp_with_time_zone(TaskWaits::ExpectedAt))
                    .col(timestamp_with_time_zone(TaskWaits::DeadlineAt))
                    .to_owned(),
            )
            .await?;
        // The sweep: waits whose next check is overdue.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_task_waits_check_at")
                    .table(TaskWaits::Table)
                    .col(TaskWaits::CheckAt)
                    .to_owned(),
            )
            .await?;
        if manager.get_database_backend() == sea_orm::DatabaseBackend::Postgres {
            manager.drop_index(drop_active()).await?;
            manager
                .create_index(active(&["PENDING", "PROCESSING", "RETRYING", "WAITING"]))
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() == sea_orm::DatabaseBackend::Postgres {
            manager.drop_index(drop_active()).await?;
            manager
                .create_index(active(&["PENDING", "PROCESSING", "RETRYING"]))
                .await?;
        }
        manager
            .drop_table(Table::drop().table(TaskWaits::Table).to_owned())
            .await
    }
}
