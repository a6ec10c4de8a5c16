//! Search sync: materials gain what their owners edit and search (title, tags), a
//! version that every change increments (the search index's external version, so a late
//! sync can never overwrite a newer one), the time of the last change, and a soft delete
//! (the row and its version stay, so the delete reaches the index fenced like any other
//! change and a reindex replays it). One column per statement: SQLite alters one at a time.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Materials {
    Table,
    UserId,
    Id,
    Title,
    Tags,
    Version,
    UpdatedAt,
    DeletedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let add = |col: ColumnDef| {
            Table::alter()
                .table(Materials::Table)
                .add_column(col)
                .to_owned()
        };
        for alter in [
            add(string_len(Materials::Title, 200).default("").to_owned()),
            // A JSON array of strings; VARCHAR (not TEXT) so MySQL accepts a default.
            add(string_len(Materials::Tags, 1024).default("[]").to_owned()),
            add(big_integer(Materials::Version).default(1).to_owned()),
            add(timestamp_with_time_zone_null(Materials::UpdatedAt)),
            add(timestamp_with_time_zone_null(Materials::DeletedAt)),
        ] {
            manager.alter_table(alter).await?;
        }
        // The reindex walks rows changed since it started.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("ix_materials_updated")
                    .table(Materials::Table)
                    .col(Materials::UpdatedAt)
                    .to_owned(),
            )
            .await?;
        // Owners list their live materials newest first.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("ix_materials_user_live")
                    .table(Materials::Table)
                    .col(Materials::UserId)
                    .col(Materials::DeletedAt)
                    .col(Materials::Id)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for name in ["ix_materials_user_live", "ix_materials_updated"] {
            manager
                .drop_index(Index::drop().name(name).table(Materials::Table).to_owned())
                .await?;
        }
        for col in [
            Materials::DeletedAt,
            Materials::UpdatedAt,
            Materials::Version,
            Materials::Tags,
            Materials::Title,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Materials::Table)
                        .drop_column(col)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
