//! Payments, second step: what a payment buys (credits, a membership, a flash-sale
//! order), what was refunded of it and what a refund could not take back (the shortfall
//! is recorded, never clamped away), refund events with their amount, a note per event,
//! and members' expiry on `users`. One column per statement: SQLite alters one at a time.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Payments {
    Table,
    OrderId,
    MembershipMonths,
    RefundedAmount,
    RefundedCredits,
    Shortfall,
}

#[derive(DeriveIden)]
enum PaymentEvents {
    Table,
    PaymentId,
    Status,
    ReceivedAt,
    Amount,
    Note,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    MemberUntil,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let add =
            |table: DynIden, col: ColumnDef| Table::alter().table(table).add_column(col).to_owned();
        for alter in [
            add(
                Payments::Table.into_iden(),
                string_len_null(Payments::OrderId, 36),
            ),
            add(
                Payments::Table.into_iden(),
                integer(Payments::MembershipMonths).default(0).to_owned(),
            ),
            add(
                Payments::Table.into_iden(),
                big_integer(Payments::RefundedAmount).default(0).to_owned(),
            ),
            add(
                Payments::Table.into_iden(),
                big_integer(Payments::RefundedCredits).default(0).to_owned(),
            ),
            add(
                Payments::Table.into_iden(),
                big_integer(Payments::Shortfall).default(0).to_owned(),
            ),
            add(
                PaymentEvents::Table.into_iden(),
                big_integer(PaymentEvents::Amount).default(0).to_owned(),
            ),
            add(
                PaymentEvents::Table.into_iden(),
                string_len_null(PaymentEvents::Note, 255),
            ),
        ] {
            manager.alter_table(alter).await?;
        }
        // MySQL/MariaDB TIMESTAMP ends in 2038, within reach of stacked yearly plans:
        // DATETIME there (UTC by convention, like every value this code writes).
        let until = if manager.get_database_backend() == sea_orm::DatabaseBackend::MySql {
            date_time_null(Users::MemberUntil)
        } else {
            timestamp_with_time_zone_null(Users::MemberUntil)
        };
        manager
            .alter_table(add(Users::Table.into_iden(), until))
            .await?;
        // The fallback applier and the inbox gauges look for old unapplied events; a
        // payment's page lists its events.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("ix_payment_events_status_received")
                    .table(PaymentEvents::Table)
                    .col(PaymentEvents::Status)
                    .col(PaymentEvents::ReceivedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("ix_payment_events_payment")
                    .table(PaymentEvents::Table)
                    .col(PaymentEvents::PaymentId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let drop =
            |table: DynIden, col: DynIden| Table::alter().table(table).drop_column(col).to_owned();
        for alter in [
            drop(Payments::Table.into_iden(), Payments::OrderId.into_iden()),
            drop(
                Payments::Table.into_iden(),
                Payments::MembershipMonths.into_iden(),
            ),
            drop(
                Payments::Table.into_iden(),
                Payments::RefundedAmount.into_iden(),
            ),
            drop(
                Payments::Table.into_iden(),
                Payments::RefundedCredits.into_iden(),
            ),
            drop(Payments::Table.into_iden(), Payments::Shortfall.into_iden()),
            drop(
                PaymentEvents::Table.into_iden(),
                PaymentEvents::Amount.into_iden(),
            ),
            drop(
                PaymentEvents::Table.into_iden(),
                PaymentEvents::Note.into_iden(),
            ),
            drop(Users::Table.into_iden(), Users::MemberUntil.into_iden()),
        ] {
            manager.alter_table(alter).await?;
        }
        Ok(())
    }
}
