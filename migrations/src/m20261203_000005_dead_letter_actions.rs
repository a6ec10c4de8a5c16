//! The audit trail of dead-letter operations: who replayed or discarded which dead
//! letter, when. Append-only; the dead letter's own row holds its current status.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum DeadLetterActions {
    Table,
    Id,
    DeadLetterId,
    Action,
    Actor,
    At,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(DeadLetterActions::Table)
                    .if_not_exists()
                    .col(big_pk_auto(DeadLetterActions::Id))
                    .col(big_integer(DeadLetterActions::DeadLetterId))
                    .col(string_len(DeadLetterActions::Action, 16))
                    .col(string_len(DeadLetterActions::Actor, 128))
                    .col(timestamp_with_time_zone(DeadLetterActions::At))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_dead_letter_actions_dead_letter")
                    .table(DeadLetterActions::Table)
                    .col(DeadLetterActions::DeadLetterId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(DeadLetterActions::Table).to_owned())
            .await
    }
}
