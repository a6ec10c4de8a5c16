//! `ai_usage`: what each finished step of an AI task consumed at its provider (tokens,
//! images, media seconds) and, on a task's last step, the credits it was charged;
//! summed per tenant by `GET /v1/me/usage`.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum AiUsage {
    Table,
    Id,
    TaskId,
    UserId,
    Kind,
    Step,
    Provider,
    Model,
    InputTokens,
    OutputTokens,
    TotalTokens,
    Images,
    MediaMs,
    Credits,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(AiUsage::Table)
                    .if_not_exists()
                    .col(big_pk_auto(AiUsage::Id))
                    .col(string_len(AiUsage::TaskId, 64))
                    .col(string_len(AiUsage::UserId, 64))
                    .col(string_len(AiUsage::Kind, 32))
                    .col(string_len(AiUsage::Step, 64))
                    .col(string_len(AiUsage::Provider, 64))
                    .col(string_len_null(AiUsage::Model, 128))
                    .col(big_integer(AiUsage::InputTokens))
                    .col(big_integer(AiUsage::OutputTokens))
                    .col(big_integer(AiUsage::TotalTokens))
                    .col(big_integer(AiUsage::Images))
                    .col(big_integer(AiUsage::MediaMs))
                    .col(big_integer(AiUsage::Credits))
                    .col(timestamp_with_time_zone(AiUsage::CreatedAt))
                    .to_owned(),
            )
            .await?;
        // A tenant's range (the usage report); a task's earlier steps (its charge).
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_ai_usage_user_created")
                    .table(AiUsage::Table)
                    .col(AiUsage::UserId)
                    .col(AiUsage::CreatedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_ai_usage_task")
                    .table(AiUsage::Table)
                    .col(AiUsage::TaskId)
                    .to_owned(),
            )
            .await?;
        // Trimmed oldest first.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_ai_usage_created")
                    .table(AiUsage::Table)
                    .col(AiUsage::CreatedAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(AiUsage::Table).to_owned())
            .await
    }
}
