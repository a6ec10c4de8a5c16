//! `ops_alerts`: the alert episodes the ops board fired and resolved.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum OpsAlerts {
    Table,
    Id,
    Rule,
    Queue,
    Summary,
    Value,
    Threshold,
    FiredAt,
    ResolvedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(OpsAlerts::Table)
                    .if_not_exists()
                    .col(big_pk_auto(OpsAlerts::Id))
                    .col(string_len(OpsAlerts::Rule, 32))
                    .col(string_len(OpsAlerts::Queue, 128))
                    .col(text(OpsAlerts::Summary))
                    .col(double(OpsAlerts::Value))
                    .col(double(OpsAlerts::Threshold))
                    .col(timestamp_with_time_zone(OpsAlerts::FiredAt))
                    .col(timestamp_with_time_zone_null(OpsAlerts::ResolvedAt))
                    .to_owned(),
            )
            .await?;
        // The history is read newest first.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_ops_alerts_fired")
                    .table(OpsAlerts::Table)
                    .col(OpsAlerts::FiredAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(OpsAlerts::Table).to_owned())
            .await
    }
}
