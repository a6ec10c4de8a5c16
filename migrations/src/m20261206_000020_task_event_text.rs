//! Streamed text on task events: `kind` says what an event is (`progress`, `delta`: a
//! piece of the text being generated, `reset`: discard the text of earlier attempts) and
//! `delta` holds the piece. Existing rows are progress events.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TaskEvents {
    Table,
    Kind,
    Delta,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TaskEvents::Table)
                    .add_column(string_len(TaskEvents::Kind, 16).default("progress"))
                    .to_owned(),
            )
            .await?;
        // SQLite alters one column per statement.
        manager
            .alter_table(
                Table::alter()
                    .table(TaskEvents::Table)
                    .add_column(text_null(TaskEvents::Delta))
                    .to_owned(),
            )
            .await?;
        // Streamed text is trimmed after a while (the task's result keeps the whole).
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_task_events_kind_created")
                    .table(TaskEvents::Table)
                    .col(TaskEvents::Kind)
                    .col(TaskEvents::CreatedAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("idx_task_events_kind_created")
                    .table(TaskEvents::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(TaskEvents::Table)
                    .drop_column(TaskEvents::Delta)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(TaskEvents::Table)
                    .drop_column(TaskEvents::Kind)
                    .to_owned(),
            )
            .await
    }
}
