//! Search by meaning: the vectors a material is found by (its summary, its knowledge
//! entry, chunks of its transcript), one row each, written with the material. They are
//! the source the search index copies (a reindex reads them like the material's text).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum MaterialVectors {
    Table,
    MaterialId,
    Seq,
    Model,
    /// Little-endian `f32`s (a BLOB holds 16,384 dimensions, more than any model has).
    Vector,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(MaterialVectors::Table)
                    .if_not_exists()
                    .col(string_len(MaterialVectors::MaterialId, 64))
                    .col(small_integer(MaterialVectors::Seq))
                    .col(string_len(MaterialVectors::Model, 100))
                    .col(blob(MaterialVectors::Vector))
                    .primary_key(
                        Index::create()
                            .col(MaterialVectors::MaterialId)
                            .col(MaterialVectors::Seq),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(MaterialVectors::Table).to_owned())
            .await
    }
}
