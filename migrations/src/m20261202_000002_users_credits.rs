//! Users, their API keys (stored as SHA-256 hashes, never in clear) and the credit
//! ledger, whose unique `effect_key` makes every credit movement happen at most once.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
    Name,
    Credits,
    IsAdmin,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Id,
    UserId,
    KeyHash,
    Prefix,
    CreatedAt,
    RevokedAt,
}

#[derive(DeriveIden)]
enum CreditLedger {
    Table,
    Id,
    UserId,
    Delta,
    Reason,
    EffectKey,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Users::Table)
                    .if_not_exists()
                    .col(string_len(Users::Id, 36).primary_key())
                    .col(string_len(Users::Name, 128))
                    .col(big_integer(Users::Credits))
                    .col(boolean(Users::IsAdmin).default(false))
                    .col(timestamp_with_time_zone(Users::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ApiKeys::Table)
                    .if_not_exists()
                    .col(string_len(ApiKeys::Id, 36).primary_key())
                    .col(string_len(ApiKeys::UserId, 36))
                    .col(string_len_uniq(ApiKeys::KeyHash, 64))
                    .col(string_len(ApiKeys::Prefix, 16))
                    .col(timestamp_with_time_zone(ApiKeys::CreatedAt))
                    .col(timestamp_with_time_zone_null(ApiKeys::RevokedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_api_keys_user")
                            .from(ApiKeys::Table, ApiKeys::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(CreditLedger::Table)
                    .if_not_exists()
                    .col(big_pk_auto(CreditLedger::Id))
                    .col(string_len(CreditLedger::UserId, 36))
                    .col(big_integer(CreditLedger::Delta))
                    .col(string_len(CreditLedger::Reason, 32))
                    .col(string_len_uniq(CreditLedger::EffectKey, 191))
                    .col(timestamp_with_time_zone(CreditLedger::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_credit_ledger_user")
                            .from(CreditLedger::Table, CreditLedger::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_credit_ledger_user")
                    .table(CreditLedger::Table)
                    .col(CreditLedger::UserId)
                    .col(CreditLedger::Id)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(CreditLedger::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(ApiKeys::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(Users::Table).to_owned())
            .await
    }
}
