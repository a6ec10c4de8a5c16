//! Invitations to an organisation (issue 55): an owner no longer adds a user, they invite
//! one, and the user joins only by accepting. One row per invitation, kept after it is
//! answered (accepted, declined, revoked) so the trail says how each member came in; an
//! invitation past `expires_at` and still pending is expired (read, never written).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum OrgInvitations {
    Table,
    Id,
    OrgId,
    UserId,
    InvitedBy,
    Status,
    CreatedAt,
    ExpiresAt,
    AnsweredAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(OrgInvitations::Table)
                    .if_not_exists()
                    .col(string_len(OrgInvitations::Id, 36).primary_key())
                    .col(string_len(OrgInvitations::OrgId, 36))
                    .col(string_len(OrgInvitations::UserId, 36))
                    .col(string_len(OrgInvitations::InvitedBy, 36))
                    // `pending`, `accepted`, `declined`, `revoked`.
                    .col(string_len(OrgInvitations::Status, 16))
                    .col(timestamp_with_time_zone(OrgInvitations::CreatedAt))
                    .col(timestamp_with_time_zone(OrgInvitations::ExpiresAt))
                    .col(timestamp_with_time_zone_null(OrgInvitations::AnsweredAt))
                    .to_owned(),
            )
            .await?;
        // A user's open invitations (`GET /v1/me/invitations`); an organisation's (the
        // owner's list, the cap on open ones, an invitation repeated).
        for (name, col) in [
            ("ix_org_invitations_user", OrgInvitations::UserId),
            ("ix_org_invitations_org", OrgInvitations::OrgId),
        ] {
            manager
                .create_index(
                    Index::create()
                        .if_not_exists()
                        .name(name)
                        .table(OrgInvitations::Table)
                        .col(col)
                        .col(OrgInvitations::Status)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(OrgInvitations::Table).to_owned())
            .await
    }
}
