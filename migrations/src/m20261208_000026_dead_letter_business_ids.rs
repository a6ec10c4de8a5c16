//! Dead letters found by what they were about: the business id their message names (a
//! task, an order, a payment, a material, a webhook delivery: the envelope's correlation
//! id), indexed, so an operator finds the dead letter of a given order without scanning
//! bodies; and the consumer instance that handled the message last.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum DeadLetters {
    Table,
    BusinessId,
    Consumer,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(DeadLetters::Table)
                    .add_column(string_len_null(DeadLetters::BusinessId, 64))
                    .to_owned(),
            )
            .await?;
        // SQLite alters one column per statement.
        manager
            .alter_table(
                Table::alter()
                    .table(DeadLetters::Table)
                    .add_column(string_len_null(DeadLetters::Consumer, 200))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("ix_dead_letters_business_id")
                    .table(DeadLetters::Table)
                    .col(DeadLetters::BusinessId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("ix_dead_letters_business_id")
                    .table(DeadLetters::Table)
                    .to_owned(),
            )
            .await?;
        for col in [DeadLetters::BusinessId, DeadLetters::Consumer] {
            manager
                .alter_table(
                    Table::alter()
                        .table(DeadLetters::Table)
                        .drop_column(col)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
