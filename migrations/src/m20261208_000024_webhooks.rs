//! Outgoing webhooks: a tenant's endpoints (URL, the event types it wants, its signing
//! secret and the one it replaces during a rotation), the events recorded with the state
//! changes they report, one delivery per (event, endpoint) with its latest outcome, and
//! every attempt of it (the delivery log).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum WebhookEndpoints {
    Table,
    Id,
    UserId,
    Url,
    Description,
    EventTypes,
    Enabled,
    Secret,
    PreviousSecret,
    PreviousUntil,
    DisabledReason,
    FailingSince,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum WebhookEvents {
    Table,
    Id,
    UserId,
    EventType,
    Payload,
    CreatedAt,
}

#[derive(DeriveIden)]
enum WebhookDeliveries {
    Table,
    Id,
    EventId,
    EndpointId,
    UserId,
    EventType,
    Status,
    Attempts,
    NextAttemptAt,
    GiveUpAt,
    LastStatus,
    LastResponse,
    LastLatencyMs,
    LastError,
    CreatedAt,
    DeliveredAt,
}

#[derive(DeriveIden)]
enum WebhookAttempts {
    Table,
    DeliveryId,
    Attempt,
    At,
    StatusCode,
    Response,
    LatencyMs,
    Error,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(WebhookEndpoints::Table)
                    .if_not_exists()
                    .col(string_len(WebhookEndpoints::Id, 36).primary_key())
                    .col(string_len(WebhookEndpoints::UserId, 64))
                    .col(string_len(WebhookEndpoints::Url, 2048))
                    .col(string_len(WebhookEndpoints::Description, 500))
                    // A JSON array of event types; empty: every type.
                    .col(string_len(WebhookEndpoints::EventTypes, 1024))
                    .col(boolean(WebhookEndpoints::Enabled))
                    .col(string_len(WebhookEndpoints::Secret, 100))
                    .col(string_len_null(WebhookEndpoints::PreviousSecret, 100))
                    .col(timestamp_with_time_zone_null(
                        WebhookEndpoints::PreviousUntil,
                    ))
                    .col(string_len_null(WebhookEndpoints::DisabledReason, 200))
                    .col(timestamp_with_time_zone_null(
                        WebhookEndpoints::FailingSince,
                    ))
                    .col(timestamp_with_time_zone(WebhookEndpoints::CreatedAt))
                    .col(timestamp_with_time_zone(WebhookEndpoints::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        // Every state change looks up the endpoints of its tenant.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("ix_webhook_endpoints_user")
                    .table(WebhookEndpoints::Table)
                    .col(WebhookEndpoints::UserId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(WebhookEvents::Table)
                    .if_not_exists()
                    .col(string_len(WebhookEvents::Id, 40).primary_key())
                    .col(string_len(WebhookEvents::UserId, 64))
                    .col(string_len(WebhookEvents::EventType, 64))
                    .col(text(WebhookEvents::Payload))
                    .col(timestamp_with_time_zone(WebhookEvents::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(WebhookDeliveries::Table)
                    .if_not_exists()
                    .col(string_len(WebhookDeliveries::Id, 36).primary_key())
                    .col(string_len(WebhookDeliveries::EventId, 40))
                    .col(string_len(WebhookDeliveries::EndpointId, 36))
                    .col(string_len(WebhookDeliveries::UserId, 64))
                    .col(string_len(WebhookDeliveries::EventType, 64))
                    .col(string_len(WebhookDeliveries::Status, 16))
                    .col(integer(WebhookDeliveries::Attempts))
                    .col(timestamp_with_time_zone_null(
                        WebhookDeliveries::NextAttemptAt,
                    ))
                    .col(timestamp_with_time_zone(WebhookDeliveries::GiveUpAt))
                    .col(integer_null(WebhookDeliveries::LastStatus))
                    .col(string_len_null(WebhookDeliveries::LastResponse, 1024))
                    .col(integer_null(WebhookDeliveries::LastLatencyMs))
                    .col(string_len_null(WebhookDeliveries::LastError, 500))
                    .col(timestamp_with_time_zone(WebhookDeliveries::CreatedAt))
                    .col(timestamp_with_time_zone_null(
                        WebhookDeliveries::DeliveredAt,
                    ))
                    .to_owned(),
            )
            .await?;
        // One delivery per event and endpoint, however often the event is recorded.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("ux_webhook_deliveries_event_endpoint")
                    .table(WebhookDeliveries::Table)
                    .col(WebhookDeliveries::EventId)
                    .col(WebhookDeliveries::EndpointId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        // What is still being attempted (the ops console's backlog by tenant).
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("ix_webhook_deliveries_status_user")
                    .table(WebhookDeliveries::Table)
                    .col(WebhookDeliveries::Status)
                    .col(WebhookDeliveries::UserId)
                    .to_owned(),
            )
            .await?;
        // The delivery log of an endpoint, newest first.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("ix_webhook_deliveries_endpoint")
                    .table(WebhookDeliveries::Table)
                    .col(WebhookDeliveries::EndpointId)
                    .col(WebhookDeliveries::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(WebhookAttempts::Table)
                    .if_not_exists()
                    .col(string_len(WebhookAttempts::DeliveryId, 36))
                    .col(integer(WebhookAttempts::Attempt))
                    .col(timestamp_with_time_zone(WebhookAttempts::At))
                    .col(integer_null(WebhookAttempts::StatusCode))
                    .col(string_len_null(WebhookAttempts::Response, 1024))
                    .col(integer(WebhookAttempts::LatencyMs))
                    .col(string_len_null(WebhookAttempts::Error, 500))
                    .primary_key(
                        Index::create()
                            .col(WebhookAttempts::DeliveryId)
                            .col(WebhookAttempts::Attempt),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            WebhookAttempts::Table.into_iden(),
            WebhookDeliveries::Table.into_iden(),
            WebhookEvents::Table.into_iden(),
            WebhookEndpoints::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
