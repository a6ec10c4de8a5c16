//! Short-lived, single-use tickets that authenticate a browser's WebSocket upgrade
//! (browsers cannot set an Authorization header on one). Stored hashed.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum WsTickets {
    Table,
    TicketHash,
    UserId,
    ExpiresAt,
    UsedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(WsTickets::Table)
                    .if_not_exists()
                    .col(string_len(WsTickets::TicketHash, 64).primary_key())
                    .col(string_len(WsTickets::UserId, 36))
                    .col(timestamp_with_time_zone(WsTickets::ExpiresAt))
                    .col(timestamp_with_time_zone_null(WsTickets::UsedAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(WsTickets::Table).to_owned())
            .await
    }
}
