//! The crash-loop counter: redeliveries per message id (see `consumer::deaths`).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum MessageDeaths {
    Table,
    MessageId,
    Queue,
    Deaths,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(MessageDeaths::Table)
                    .if_not_exists()
                    .col(string_len(MessageDeaths::MessageId, 128).primary_key())
                    .col(string_len(MessageDeaths::Queue, 64))
                    .col(integer(MessageDeaths::Deaths))
                    .col(timestamp_with_time_zone(MessageDeaths::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        // Housekeeping trims old counters.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("ix_message_deaths_updated")
                    .table(MessageDeaths::Table)
                    .col(MessageDeaths::UpdatedAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(MessageDeaths::Table).to_owned())
            .await
    }
}
