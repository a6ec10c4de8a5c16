//! Payment intents are counted per user while open (`limits.open_payments`) and expired
//! by age (`payments.intent_ttl_secs`): an index for each, so neither scans the table.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Payments {
    Table,
    UserId,
    Status,
    CreatedAt,
}

const BY_USER: &str = "idx_payments_user_status";
const BY_AGE: &str = "idx_payments_status_created";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(BY_USER)
                    .table(Payments::Table)
                    .col(Payments::UserId)
                    .col(Payments::Status)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(BY_AGE)
                    .table(Payments::Table)
                    .col(Payments::Status)
                    .col(Payments::CreatedAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for name in [BY_USER, BY_AGE] {
            manager
                .drop_index(Index::drop().name(name).table(Payments::Table).to_owned())
                .await?;
        }
        Ok(())
    }
}
