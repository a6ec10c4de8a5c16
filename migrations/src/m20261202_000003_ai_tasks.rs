//! AI generation tasks: the task rows (state machine, lease, progress), their event log
//! (per-task monotonic sequence numbers), the materials their results become, and the
//! idempotency keys of task submissions.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tasks {
    Table,
    Id,
    UserId,
    Kind,
    Prompt,
    Params,
    Status,
    Attempt,
    StepIndex,
    Step,
    Progress,
    Seq,
    Cost,
    Result,
    Error,
    HeartbeatAt,
    CreatedAt,
    UpdatedAt,
    StartedAt,
    FinishedAt,
}

#[derive(DeriveIden)]
enum TaskEvents {
    Table,
    Id,
    TaskId,
    Seq,
    Status,
    Progress,
    Step,
    Message,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Materials {
    Table,
    Id,
    UserId,
    TaskId,
    Kind,
    Content,
    CreatedAt,
}

#[derive(DeriveIden)]
enum IdempotencyKeys {
    Table,
    Id,
    UserId,
    Key,
    RequestHash,
    Status,
    Response,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Tasks::Table)
                    .if_not_exists()
                    .col(string_len(Tasks::Id, 36).primary_key())
                    .col(string_len(Tasks::UserId, 36))
                    .col(string_len(Tasks::Kind, 32))
                    .col(text(Tasks::Prompt))
                    .col(text(Tasks::Params))
                    .col(string_len(Tasks::Status, 16))
                    .col(integer(Tasks::Attempt).default(0))
                    .col(integer(Tasks::StepIndex).default(0))
                    .col(string_len_null(Tasks::Step, 64))
                    .col(integer(Tasks::Progress).default(0))
                    .col(integer(Tasks::Seq).default(0))
                    .col(big_integer(Tasks::Cost))
                    .col(text_null(Tasks::Result))
                    .col(text_null(Tasks::Error))
                    .col(timestamp_with_time_zone_null(Tasks::HeartbeatAt))
                    .col(timestamp_with_time_zone(Tasks::CreatedAt))
                    .col(timestamp_with_time_zone(Tasks::UpdatedAt))
                    .col(timestamp_with_time_zone_null(Tasks::StartedAt))
                    .col(timestamp_with_time_zone_null(Tasks::FinishedAt))
                    .to_owned(),
            )
            .await?;
        // A user's tasks, newest first (ids are UUIDv7: time-ordered).
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_tasks_user")
                    .table(Tasks::Table)
                    .col(Tasks::UserId)
                    .col(Tasks::Id)
                    .to_owned(),
            )
            .await?;
        // The reaper's scan for stale leases.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_tasks_status_heartbeat")
                    .table(Tasks::Table)
                    .col(Tasks::Status)
                    .col(Tasks::HeartbeatAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(TaskEvents::Table)
                    .if_not_exists()
                    .col(big_pk_auto(TaskEvents::Id))
                    .col(string_len(TaskEvents::TaskId, 36))
                    .col(integer(TaskEvents::Seq))
                    .col(string_len(TaskEvents::Status, 16))
                    .col(integer(TaskEvents::Progress))
                    .col(string_len_null(TaskEvents::Step, 64))
                    .col(text_null(TaskEvents::Message))
                    .col(timestamp_with_time_zone(TaskEvents::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("uq_task_events_seq")
                    .table(TaskEvents::Table)
                    .col(TaskEvents::TaskId)
                    .col(TaskEvents::Seq)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Materials::Table)
                    .if_not_exists()
                    .col(string_len(Materials::Id, 36).primary_key())
                    .col(string_len(Materials::UserId, 36))
                    .col(string_len_uniq(Materials::TaskId, 36))
                    .col(string_len(Materials::Kind, 32))
                    .col(text(Materials::Content))
                    .col(timestamp_with_time_zone(Materials::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_materials_user")
                    .table(Materials::Table)
                    .col(Materials::UserId)
                    .col(Materials::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(IdempotencyKeys::Table)
                    .if_not_exists()
                    .col(big_pk_auto(IdempotencyKeys::Id))
                    .col(string_len(IdempotencyKeys::UserId, 36))
                    .col(string_len(IdempotencyKeys::Key, 128))
                    .col(string_len(IdempotencyKeys::RequestHash, 64))
                    .col(integer(IdempotencyKeys::Status))
                    .col(text(IdempotencyKeys::Response))
                    .col(timestamp_with_time_zone(IdempotencyKeys::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("uq_idempotency_user_key")
                    .table(IdempotencyKeys::Table)
                    .col(IdempotencyKeys::UserId)
                    .col(IdempotencyKeys::Key)
                    .unique()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for t in [
            IdempotencyKeys::Table.into_iden(),
            Materials::Table.into_iden(),
            TaskEvents::Table.into_iden(),
            Tasks::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(t).to_owned())
                .await?;
        }
        Ok(())
    }
}
