//! Flash-sale orders: the sales (with a `sold` counter that the database keeps at or
//! below the stock, the oversell backstop behind Redis), the orders the consumers write
//! (unique per sale and user when the limit is one), and each order's event log for the
//! buyer's live page.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum FlashSales {
    Table,
    Id,
    Item,
    Price,
    Stock,
    PerUserLimit,
    Sold,
    StartsAt,
    EndsAt,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Orders {
    Table,
    Id,
    SaleId,
    UserId,
    /// The user id when the sale's limit is one (else NULL): unique with the sale.
    LimitKey,
    Price,
    Status,
    Seq,
    PayBy,
    PaymentRef,
    /// A payment that arrived after the cancel: to be refunded, never applied.
    LatePaymentRef,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum OrderEvents {
    Table,
    Id,
    OrderId,
    Seq,
    Status,
    Message,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(FlashSales::Table)
                    .if_not_exists()
                    .col(string_len(FlashSales::Id, 36).primary_key())
                    .col(string_len(FlashSales::Item, 200))
                    .col(big_integer(FlashSales::Price))
                    .col(integer(FlashSales::Stock))
                    .col(integer(FlashSales::PerUserLimit))
                    .col(integer(FlashSales::Sold).default(0))
                    .col(timestamp_with_time_zone(FlashSales::StartsAt))
                    .col(timestamp_with_time_zone(FlashSales::EndsAt))
                    .col(timestamp_with_time_zone(FlashSales::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Orders::Table)
                    .if_not_exists()
                    .col(string_len(Orders::Id, 36).primary_key())
                    .col(string_len(Orders::SaleId, 36))
                    .col(string_len(Orders::UserId, 36))
                    .col(string_len_null(Orders::LimitKey, 36))
                    .col(big_integer(Orders::Price))
                    .col(string_len(Orders::Status, 16))
                    .col(integer(Orders::Seq).default(0))
                    .col(timestamp_with_time_zone(Orders::PayBy))
                    .col(string_len_null(Orders::PaymentRef, 128))
                    .col(string_len_null(Orders::LatePaymentRef, 128))
                    .col(timestamp_with_time_zone(Orders::CreatedAt))
                    .col(timestamp_with_time_zone(Orders::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        // NULLs never collide, so only limit-one sales are held to one order per user.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("uq_orders_sale_limit_key")
                    .table(Orders::Table)
                    .col(Orders::SaleId)
                    .col(Orders::LimitKey)
                    .unique()
                    .to_owned(),
            )
            .await?;
        // A buyer's orders, newest first (ids are UUIDv7: time-ordered).
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_orders_user")
                    .table(Orders::Table)
                    .col(Orders::UserId)
                    .col(Orders::Id)
                    .to_owned(),
            )
            .await?;
        // The sweep's scan for unpaid orders past their deadline; reconciliation counts.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_orders_status_pay_by")
                    .table(Orders::Table)
                    .col(Orders::Status)
                    .col(Orders::PayBy)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_orders_sale_status")
                    .table(Orders::Table)
                    .col(Orders::SaleId)
                    .col(Orders::Status)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(OrderEvents::Table)
                    .if_not_exists()
                    .col(big_pk_auto(OrderEvents::Id))
                    .col(string_len(OrderEvents::OrderId, 36))
                    .col(integer(OrderEvents::Seq))
                    .col(string_len(OrderEvents::Status, 16))
                    .col(text_null(OrderEvents::Message))
                    .col(timestamp_with_time_zone(OrderEvents::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("uq_order_events_seq")
                    .table(OrderEvents::Table)
                    .col(OrderEvents::OrderId)
                    .col(OrderEvents::Seq)
                    .unique()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for t in [
            OrderEvents::Table.into_iden(),
            Orders::Table.into_iden(),
            FlashSales::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(t).to_owned())
                .await?;
        }
        Ok(())
    }
}
