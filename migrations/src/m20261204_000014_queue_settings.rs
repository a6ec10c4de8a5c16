//! `queue_settings`: a queue's concurrency (prefetch) set by an operator at run time;
//! every consumer process of the queue polls it and follows within seconds.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum QueueSettings {
    Table,
    Queue,
    Prefetch,
    UpdatedBy,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(QueueSettings::Table)
                    .if_not_exists()
                    .col(string_len(QueueSettings::Queue, 128).primary_key())
                    .col(integer(QueueSettings::Prefetch))
                    .col(string_len(QueueSettings::UpdatedBy, 128))
                    .col(timestamp_with_time_zone(QueueSettings::UpdatedAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(QueueSettings::Table).to_owned())
            .await
    }
}
