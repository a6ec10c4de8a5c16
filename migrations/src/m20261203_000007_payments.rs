//! Payments: the intents buyers create (what they pay for, how much) and the inbox of
//! verified provider events (unique per provider and event id: a redelivered webhook finds
//! its row and changes nothing).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Payments {
    Table,
    Id,
    UserId,
    Product,
    Credits,
    Amount,
    Currency,
    Status,
    CreatedAt,
    PaidAt,
}

#[derive(DeriveIden)]
enum PaymentEvents {
    Table,
    Id,
    Provider,
    EventId,
    PaymentId,
    Kind,
    Status,
    ReceivedAt,
    AppliedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Payments::Table)
                    .if_not_exists()
                    .col(string_len(Payments::Id, 36).primary_key())
                    .col(string_len(Payments::UserId, 36))
                    .col(string_len(Payments::Product, 64))
                    .col(big_integer(Payments::Credits))
                    .col(big_integer(Payments::Amount))
                    .col(string_len(Payments::Currency, 8))
                    .col(string_len(Payments::Status, 16))
                    .col(timestamp_with_time_zone(Payments::CreatedAt))
                    .col(timestamp_with_time_zone_null(Payments::PaidAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(PaymentEvents::Table)
                    .if_not_exists()
                    .col(big_pk_auto(PaymentEvents::Id))
                    .col(string_len(PaymentEvents::Provider, 16))
                    .col(string_len(PaymentEvents::EventId, 128))
                    .col(string_len(PaymentEvents::PaymentId, 36))
                    .col(string_len(PaymentEvents::Kind, 16))
                    .col(string_len(PaymentEvents::Status, 16))
                    .col(timestamp_with_time_zone(PaymentEvents::ReceivedAt))
                    .col(timestamp_with_time_zone_null(PaymentEvents::AppliedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("uq_payment_events_provider_event")
                    .table(PaymentEvents::Table)
                    .col(PaymentEvents::Provider)
                    .col(PaymentEvents::EventId)
                    .unique()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for t in [
            PaymentEvents::Table.into_iden(),
            Payments::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(t).to_owned())
                .await?;
        }
        Ok(())
    }
}
