//! A task's client metadata (a small flat object, `{"campaign": "42"}`): kept on the
//! task for its view and webhook bodies, and one row per key in `task_metadata`, indexed
//! by owner and by key/value, so "the tasks of campaign 42" is an index lookup.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tasks {
    Table,
    Metadata,
}

#[derive(DeriveIden)]
enum TaskMetadata {
    Table,
    TaskId,
    UserId,
    Key,
    Value,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Tasks::Table)
                    .add_column(text_null(Tasks::Metadata))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(TaskMetadata::Table)
                    .if_not_exists()
                    .col(string_len(TaskMetadata::TaskId, 36))
                    .col(string_len(TaskMetadata::UserId, 64))
                    .col(string_len(TaskMetadata::Key, 40))
                    .col(string_len(TaskMetadata::Value, 200))
                    .primary_key(
                        Index::create()
                            .col(TaskMetadata::TaskId)
                            .col(TaskMetadata::Key),
                    )
                    .to_owned(),
            )
            .await?;
        // An owner's tasks by a value; every tenant's (admins).
        for (name, cols) in [
            (
                "ix_task_metadata_owner",
                vec![TaskMetadata::UserId, TaskMetadata::Key, TaskMetadata::Value],
            ),
            (
                "ix_task_metadata_value",
                vec![TaskMetadata::Key, TaskMetadata::Value],
            ),
        ] {
            let mut index = Index::create();
            index.if_not_exists().name(name).table(TaskMetadata::Table);
            for c in cols {
                index.col(c);
            }
            manager.create_index(index.to_owned()).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(TaskMetadata::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Tasks::Table)
                    .drop_column(Tasks::Metadata)
                    .to_owned(),
            )
            .await
    }
}
