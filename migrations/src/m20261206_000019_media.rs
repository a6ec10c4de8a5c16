//! Media storage: `media_objects` (uploads and generated files: who owns them, where
//! they are in the store, what they are, whether they are going) and `storage_usage`
//! (bytes each tenant holds, reserved before bytes are written).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum MediaObjects {
    Table,
    Id,
    UserId,
    Purpose,
    Status,
    StoreKey,
    Size,
    Reserved,
    ContentType,
    Sha256,
    Width,
    Height,
    DurationMs,
    Reason,
    TaskId,
    CreatedAt,
    UpdatedAt,
    DeletedAt,
    PurgeAt,
}

#[derive(DeriveIden)]
enum StorageUsage {
    Table,
    UserId,
    Bytes,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(MediaObjects::Table)
                    .if_not_exists()
                    .col(string_len(MediaObjects::Id, 64).primary_key())
                    .col(string_len(MediaObjects::UserId, 64))
                    .col(string_len(MediaObjects::Purpose, 16))
                    .col(string_len(MediaObjects::Status, 16))
                    .col(string_len_null(MediaObjects::StoreKey, 255).unique_key())
                    .col(big_integer(MediaObjects::Size).default(0))
                    .col(big_integer(MediaObjects::Reserved).default(0))
                    .col(string_len_null(MediaObjects::ContentType, 100))
                    .col(string_len_null(MediaObjects::Sha256, 64))
                    .col(integer_null(MediaObjects::Width))
                    .col(integer_null(MediaObjects::Height))
                    .col(big_integer_null(MediaObjects::DurationMs))
                    .col(string_len_null(MediaObjects::Reason, 500))
                    .col(string_len_null(MediaObjects::TaskId, 64))
                    .col(timestamp_with_time_zone(MediaObjects::CreatedAt))
                    .col(timestamp_with_time_zone(MediaObjects::UpdatedAt))
                    .col(timestamp_with_time_zone_null(MediaObjects::DeletedAt))
                    .col(timestamp_with_time_zone_null(MediaObjects::PurgeAt))
                    .to_owned(),
            )
            .await?;
        // An owner's files, newest first.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_media_objects_user")
                    .table(MediaObjects::Table)
                    .col(MediaObjects::UserId)
                    .col(MediaObjects::Id)
                    .to_owned(),
            )
            .await?;
        // A task's files (its material lists them).
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_media_objects_task")
                    .table(MediaObjects::Table)
                    .col(MediaObjects::TaskId)
                    .to_owned(),
            )
            .await?;
        // The collector: removals due, abandoned uploads.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_media_objects_purge")
                    .table(MediaObjects::Table)
                    .col(MediaObjects::PurgeAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_media_objects_status")
                    .table(MediaObjects::Table)
                    .col(MediaObjects::Status)
                    .col(MediaObjects::CreatedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(StorageUsage::Table)
                    .if_not_exists()
                    .col(string_len(StorageUsage::UserId, 64).primary_key())
                    .col(big_integer(StorageUsage::Bytes).default(0))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(StorageUsage::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(MediaObjects::Table).to_owned())
            .await
    }
}
