//! A queue's concurrency changed at run time: an operator sets it (`PUT
//! /v1/admin/queues/{queue}/concurrency`, `conveyor queues set-concurrency`), it is
//! stored in `queue_settings` with an audit row, and every consumer process of the
//! queue polls it every `consumer.settings_poll_ms` and follows: the subscription takes
//! the new prefetch (on RabbitMQ a new consumer on the same channel, the old one
//! cancelled and drained: nothing in flight is dropped), and the batch slots with it.

use chrono::Utc;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveValue::Set, ConnectionTrait, DbErr, EntityTrait, TransactionTrait as _};

pub mod entity {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "queue_settings")]
    pub struct Model {
        /// The queue's key (`ai.short`).
        #[sea_orm(primary_key, auto_increment = false)]
        pub queue: String,
        pub prefetch: i32,
        pub updated_by: String,
        pub updated_at: DateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The highest concurrency an operator may set (RabbitMQ's prefetch is a u16; beyond a
/// few thousand unacked deliveries per consumer the broker's memory suffers first).
pub const MAX: u16 = 10_000;

/// Stores `prefetch` for `queue_key`, audited as `actor`.
pub async fn set(
    db: &sea_orm::DatabaseConnection,
    queue_key: &str,
    prefetch: u16,
    actor: &str,
) -> Result<(), DbErr> {
    let txn = db.begin().await?;
    entity::Entity::insert(entity::ActiveModel {
        queue: Set(queue_key.to_owned()),
        prefetch: Set(i32::from(prefetch)),
        updated_by: Set(actor.to_owned()),
        updated_at: Set(Utc::now()),
    })
    .on_conflict(
        OnConflict::column(entity::Column::Queue)
            .update_columns([
                entity::Column::Prefetch,
                entity::Column::UpdatedBy,
                entity::Column::UpdatedAt,
            ])
            .to_owned(),
    )
    .exec_without_returning(&txn)
    .await?;
    crate::users::audit::record(
        &txn,
        actor,
        "queue.concurrency",
        queue_key,
        serde_json::json!({ "prefetch": prefetch }),
    )
    .await?;
    txn.commit().await
}

/// The concurrency set for `queue_key`, if an operator set one.
pub async fn of(db: &impl ConnectionTrait, queue_key: &str) -> Result<Option<u16>, DbErr> {
    Ok(entity::Entity::find_by_id(queue_key.to_owned())
        .one(db)
        .await?
        .and_then(|m| u16::try_from(m.prefetch).ok())
        .filter(|p| *p > 0))
}
