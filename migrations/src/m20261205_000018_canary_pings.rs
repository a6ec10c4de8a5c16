//! `canary_pings`: the synthetic round trips of the canary domain (sent by its job
//! through the outbox, stamped by its consumer), trimmed after a week.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum CanaryPings {
    Table,
    Id,
    SentAt,
    ReceivedAt,
    LatencyMs,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(CanaryPings::Table)
                    .if_not_exists()
                    .col(string_len(CanaryPings::Id, 64).primary_key())
                    .col(timestamp_with_time_zone(CanaryPings::SentAt))
                    .col(timestamp_with_time_zone_null(CanaryPings::ReceivedAt))
                    .col(big_integer_null(CanaryPings::LatencyMs))
                    .to_owned(),
            )
            .await?;
        // Read newest first, trimmed oldest first.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_canary_pings_sent")
                    .table(CanaryPings::Table)
                    .col(CanaryPings::SentAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(CanaryPings::Table).to_owned())
            .await
    }
}
