//! The audit trail of admin actions that touch a tenant (a key revoked, limits changed,
//! a task canceled for them): who, what, on what, when. Dead-letter operations keep
//! their own, richer trail (`dead_letters`).

use chrono::Utc;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
};

pub mod entity {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
    #[sea_orm(table_name = "admin_audit")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        /// `user:<id>` for the admin API, `cli` for the command line.
        pub actor: String,
        /// `key.revoke`, `key.rotate`, `key.create`, `limits.set`, `task.cancel`.
        pub action: String,
        /// What it was done to (`user:<id>`, `key:<id>`, `task:<id>`).
        pub target: String,
        /// JSON with the action's details.
        pub detail: String,
        pub created_at: DateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Records one admin action in the caller's transaction.
pub async fn record(
    db: &impl ConnectionTrait,
    actor: &str,
    action: &str,
    target: &str,
    detail: serde_json::Value,
) -> Result<(), DbErr> {
    entity::Entity::insert(entity::ActiveModel {
        actor: Set(actor.to_owned()),
        action: Set(action.to_owned()),
        target: Set(target.to_owned()),
        detail: Set(detail.to_string()),
        created_at: Set(Utc::now()),
        ..Default::default()
    })
    .exec_without_returning(db)
    .await?;
    Ok(())
}

/// The trail of one target, oldest first.
pub async fn of(db: &impl ConnectionTrait, target: &str) -> Result<Vec<entity::Model>, DbErr> {
    entity::Entity::find()
        .filter(entity::Column::Target.eq(target))
        .order_by_asc(entity::Column::Id)
        .all(db)
        .await
}
