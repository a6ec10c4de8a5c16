//! Tables of the delivery core: the transactional outbox, the processed-message fence
//! and the dead letters kept for operators.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Outbox {
    Table,
    Id,
    MessageId,
    Queue,
    Body,
    CreatedAt,
    PublishedAt,
    Attempts,
    LastError,
}

#[derive(DeriveIden)]
enum ProcessedMessages {
    Table,
    MessageId,
    Queue,
    ProcessedAt,
}

#[derive(DeriveIden)]
enum DeadLetters {
    Table,
    Id,
    MessageId,
    Queue,
    Kind,
    Reason,
    Attempts,
    LastError,
    History,
    Body,
    Status,
    CreatedAt,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Outbox::Table)
                    .if_not_exists()
                    .col(big_pk_auto(Outbox::Id))
                    .col(string_len_uniq(Outbox::MessageId, 64))
                    .col(string_len(Outbox::Queue, 128))
                    .col(text(Outbox::Body))
                    .col(timestamp_with_time_zone(Outbox::CreatedAt))
                    .col(timestamp_with_time_zone_null(Outbox::PublishedAt))
                    .col(integer(Outbox::Attempts).default(0))
                    .col(text_null(Outbox::LastError))
                    .to_owned(),
            )
            .await?;
        // The relay scans unpublished rows in id order.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_outbox_pending")
                    .table(Outbox::Table)
                    .col(Outbox::PublishedAt)
                    .col(Outbox::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ProcessedMessages::Table)
                    .if_not_exists()
                    .col(string_len(ProcessedMessages::MessageId, 64).primary_key())
                    .col(string_len(ProcessedMessages::Queue, 128))
                    .col(timestamp_with_time_zone(ProcessedMessages::ProcessedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(DeadLetters::Table)
                    .if_not_exists()
                    .col(big_pk_auto(DeadLetters::Id))
                    .col(string_len(DeadLetters::MessageId, 64))
                    .col(string_len(DeadLetters::Queue, 128))
                    .col(string_len(DeadLetters::Kind, 128))
                    .col(string_len(DeadLetters::Reason, 32))
                    .col(integer(DeadLetters::Attempts))
                    .col(text(DeadLetters::LastError))
                    .col(text(DeadLetters::History))
                    .col(text(DeadLetters::Body))
                    .col(string_len(DeadLetters::Status, 16))
                    .col(timestamp_with_time_zone(DeadLetters::CreatedAt))
                    .col(timestamp_with_time_zone(DeadLetters::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        // One row per dead-lettering of a message at a given attempt: a redelivered
        // dead-letter decision (crash before ack) does not record it twice.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("uq_dead_letters_message_attempt")
                    .table(DeadLetters::Table)
                    .col(DeadLetters::MessageId)
                    .col(DeadLetters::Queue)
                    .col(DeadLetters::Attempts)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("idx_dead_letters_status")
                    .table(DeadLetters::Table)
                    .col(DeadLetters::Status)
                    .col(DeadLetters::Id)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(DeadLetters::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(ProcessedMessages::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(Outbox::Table).to_owned())
            .await
    }
}
