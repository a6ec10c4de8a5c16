//! Plans and organisations. A user may belong to an organisation (a team account) whose
//! plan and limits its members share; an admin may set a plan on a user or an
//! organisation, and a membership payment records the plan it grants (the user keeps the
//! plan of the latest one). Each task records
//! its tenant (the organisation, else the user), the plan it was submitted under and its
//! lane (the queue of its first step): fair share and limits count per tenant, a task's
//! place in line counts the work ahead of it in its lane.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Orgs {
    Table,
    Id,
    Name,
    OwnerId,
    Plan,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    OrgId,
    Plan,
    MemberPlan,
}

#[derive(DeriveIden)]
enum Payments {
    Table,
    Plan,
}

#[derive(DeriveIden)]
enum Tasks {
    Table,
    TenantId,
    Plan,
    Lane,
    Status,
    Id,
    StartedAt,
    UserId,
    Kind,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Orgs::Table)
                    .if_not_exists()
                    .col(string_len(Orgs::Id, 36).primary_key())
                    .col(string_len(Orgs::Name, 128))
                    .col(string_len(Orgs::OwnerId, 36))
                    .col(string_len_null(Orgs::Plan, 32))
                    .col(timestamp_with_time_zone(Orgs::CreatedAt))
                    .to_owned(),
            )
            .await?;
        // One column per statement: SQLite alters one at a time.
        for col in [
            string_len_null(Users::OrgId, 36),
            string_len_null(Users::Plan, 32),
            string_len_null(Users::MemberPlan, 32),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Users::Table)
                        .add_column(col)
                        .to_owned(),
                )
                .await?;
        }
        // The plan a membership payment grants (none: the configured membership plan).
        manager
            .alter_table(
                Table::alter()
                    .table(Payments::Table)
                    .add_column(string_len_null(Payments::Plan, 32))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("ix_users_org")
                    .table(Users::Table)
                    .col(Users::OrgId)
                    .to_owned(),
            )
            .await?;
        for col in [
            string_len(Tasks::TenantId, 36).default("").to_owned(),
            string_len(Tasks::Plan, 32).default("").to_owned(),
            string_len(Tasks::Lane, 40).default("").to_owned(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Tasks::Table)
                        .add_column(col)
                        .to_owned(),
                )
                .await?;
        }
        // Tasks written before had one tenant: their user.
        manager
            .exec_stmt(
                Query::update()
                    .table(Tasks::Table)
                    .value(Tasks::TenantId, Expr::col(Tasks::UserId))
                    .and_where(Expr::col(Tasks::TenantId).eq(""))
                    .to_owned(),
            )
            .await?;
        // Tasks still under way get the lane of their kind's first step (a long video's
        // extraction had a queue of its own: its few in-flight tasks count as regular).
        for (kinds, lane) in [
            (&["copywriting", "image"][..], "ai.short"),
            (&["video", "model3d"][..], "ai.long"),
            (&["video_analysis"][..], "ai.media.extract"),
        ] {
            manager
                .exec_stmt(
                    Query::update()
                        .table(Tasks::Table)
                        .value(Tasks::Lane, lane)
                        .and_where(Expr::col(Tasks::Lane).eq(""))
                        .and_where(Expr::col(Tasks::Kind).is_in(kinds.iter().copied()))
                        .and_where(Expr::col(Tasks::Status).is_in([
                            "PENDING",
                            "PROCESSING",
                            "RETRYING",
                            "WAITING",
                        ]))
                        .to_owned(),
                )
                .await?;
        }
        // The claim's fair share (a tenant's running tasks in a lane; a lane's waiting
        // tenants and their plans, read from the index alone), a task's place in line
        // (the PENDING work ahead of it: its tenant's, everyone's), a lane's recent
        // starts (the pace behind the estimate).
        for (name, cols) in [
            (
                "ix_tasks_tenant_lane",
                vec![Tasks::TenantId, Tasks::Lane, Tasks::Status, Tasks::Id],
            ),
            (
                "ix_tasks_lane_status",
                vec![Tasks::Lane, Tasks::Status, Tasks::TenantId, Tasks::Plan],
            ),
            ("ix_tasks_lane_started", vec![Tasks::Lane, Tasks::StartedAt]),
        ] {
            let mut index = Index::create();
            index.if_not_exists().name(name).table(Tasks::Table);
            for c in cols {
                index.col(c);
            }
            // On PostgreSQL every row version of a task gets an entry in every full index
            // (a status change is never a HOT update): the two indexes the rules read only
            // for work under way hold only that work, and a finished task costs them no
            // entry (the planner proves `status = 'PENDING'` implies the list).
            // MariaDB and SQLite have no partial indexes: full ones there.
            if name != "ix_tasks_lane_started"
                && manager.get_database_backend() == sea_orm::DatabaseBackend::Postgres
            {
                index.and_where(Expr::col(Tasks::Status).is_in([
                    "PENDING",
                    "PROCESSING",
                    "RETRYING",
                    "WAITING",
                ]));
            }
            manager.create_index(index.to_owned()).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for name in [
            "ix_tasks_tenant_lane",
            "ix_tasks_lane_status",
            "ix_tasks_lane_started",
        ] {
            manager
                .drop_index(Index::drop().name(name).table(Tasks::Table).to_owned())
                .await?;
        }
        for col in [Tasks::TenantId, Tasks::Plan, Tasks::Lane] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Tasks::Table)
                        .drop_column(col)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Payments::Table)
                    .drop_column(Payments::Plan)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name("ix_users_org")
                    .table(Users::Table)
                    .to_owned(),
            )
            .await?;
        for col in [Users::OrgId, Users::Plan, Users::MemberPlan] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Users::Table)
                        .drop_column(col)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .drop_table(Table::drop().table(Orgs::Table).to_owned())
            .await
    }
}
