//! The relay's scan of unpublished outbox rows on a partial index (`id WHERE
//! published_at IS NULL`) instead of `(published_at, id)`. Publishing a row moves it
//! out of the NULL region, but its old index entry stays until vacuum; PostgreSQL
//! answered `published_at IS NULL ORDER BY id LIMIT n` with a bitmap scan over every
//! such dead entry (bitmap scans never mark them dead): 3.3 ms per relay round after
//! 20,000 rows in the end-to-end bench, a fifth of the database's time. On the partial
//! index, with bitmap scans off for the relay's round (see `outbox::relay`), it is a
//! plain index scan in id order, which marks dead entries as it passes them (and the
//! index drops them when a page fills): ~0.3 ms per round of 40 rows.
//! MariaDB has no partial indexes (and InnoDB's purge removes old entries itself): it
//! keeps the old index.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Outbox {
    Table,
    Id,
    PublishedAt,
}

const NAME: &str = "idx_outbox_pending";

/// Replaces the pending index with `index` where partial indexes exist.
async fn replace(
    manager: &SchemaManager<'_>,
    index: &mut IndexCreateStatement,
) -> Result<(), DbErr> {
    if manager.get_database_backend() == sea_orm::DatabaseBackend::MySql {
        return Ok(());
    }
    manager
        .drop_index(Index::drop().name(NAME).table(Outbox::Table).to_owned())
        .await?;
    manager
        .create_index(index.name(NAME).table(Outbox::Table).to_owned())
        .await
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        replace(
            manager,
            Index::create()
                .col(Outbox::Id)
                .and_where(Expr::col(Outbox::PublishedAt).is_null()),
        )
        .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        replace(
            manager,
            Index::create().col(Outbox::PublishedAt).col(Outbox::Id),
        )
        .await
    }
}
