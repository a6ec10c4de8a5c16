//! The credit ledger without its foreign key to `users`. Every ledger insert checked the
//! key with a `FOR KEY SHARE` lock on the user's row, and the same rows take the credit
//! updates of concurrent submissions: a shared lock held by many transactions at once
//! (multixacts on PostgreSQL), about half the cost of each ledger row in the end-to-end
//! bench. Ledger rows are written only by code that has just read or locked the user
//! (submissions update its credits under a row lock; grants, refunds and consumptions
//! follow a task or payment of that user), users are never deleted, and `tasks`, the
//! ledger's sibling, never had the key. SQLite keeps it (one writer, no contention, and
//! it cannot drop a foreign key without rebuilding the table).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum CreditLedger {
    Table,
    UserId,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

const FK: &str = "fk_credit_ledger_user";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() == sea_orm::DatabaseBackend::Sqlite {
            return Ok(());
        }
        manager
            .drop_foreign_key(
                ForeignKey::drop()
                    .name(FK)
                    .table(CreditLedger::Table)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() == sea_orm::DatabaseBackend::Sqlite {
            return Ok(());
        }
        manager
            .create_foreign_key(
                ForeignKey::create()
                    .name(FK)
                    .from(CreditLedger::Table, CreditLedger::UserId)
                    .to(Users::Table, Users::Id)
                    .on_delete(ForeignKeyAction::Cascade)
                    .to_owned(),
            )
            .await
    }
}
