//! Abuse resistance: per-user limit overrides, the index the in-flight cap counts with,
//! key expiry (a rotated key's overlap), the key behind each WebSocket ticket, and an
//! audit trail of admin actions.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum UserLimits {
    Table,
    UserId,
    /// JSON: the overridden limits only (`{"submits_per_sec": 50}`); the rest from config.
    Overrides,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Tasks {
    Table,
    UserId,
    Status,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum WsTickets {
    Table,
    /// The key the ticket was issued with: revoking it closes the socket.
    KeyHash,
}

#[derive(DeriveIden)]
enum AdminAudit {
    Table,
    Id,
    Actor,
    Action,
    Target,
    Detail,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(UserLimits::Table)
                    .if_not_exists()
                    .col(string_len(UserLimits::UserId, 64).primary_key())
                    .col(text(UserLimits::Overrides))
                    .col(timestamp_with_time_zone(UserLimits::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        // The in-flight cap counts a user's active tasks at every submission: by index,
        // not through their whole history.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_tasks_user_status")
                    .table(Tasks::Table)
                    .col(Tasks::UserId)
                    .col(Tasks::Status)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(ApiKeys::Table)
                    .add_column(timestamp_with_time_zone_null(ApiKeys::ExpiresAt))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(WsTickets::Table)
                    .add_column(string_len_null(WsTickets::KeyHash, 64))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(AdminAudit::Table)
                    .if_not_exists()
                    .col(big_integer(AdminAudit::Id).primary_key().auto_increment())
                    .col(string_len(AdminAudit::Actor, 64))
                    .col(string_len(AdminAudit::Action, 64))
                    .col(string_len(AdminAudit::Target, 128))
                    .col(text(AdminAudit::Detail))
                    .col(timestamp_with_time_zone(AdminAudit::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("ix_admin_audit_target")
                    .table(AdminAudit::Table)
                    .col(AdminAudit::Target)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(AdminAudit::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(WsTickets::Table)
                    .drop_column(WsTickets::KeyHash)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(ApiKeys::Table)
                    .drop_column(ApiKeys::ExpiresAt)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name("idx_tasks_user_status")
                    .table(Tasks::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(UserLimits::Table).to_owned())
            .await
    }
}
