//! The crash-loop counter: how many times each message came back marked `redelivered`
//! (its consumer died holding it, or handed it back). Kept in the database, so it survives
//! the crashes it counts (the embedded dedupe store lives in the process that dies) and
//! is shared by every consumer process. Only redeliveries write here: a rare path.

use chrono::Utc;
use sea_orm::sea_query::{Expr, ExprTrait as _, OnConflict};
use sea_orm::{ActiveValue::Set, ConnectionTrait, DbErr, EntityTrait};

pub mod entity {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "message_deaths")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub message_id: String,
        pub queue: String,
        pub deaths: i32,
        pub updated_at: DateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Counts one more death of `message_id`; the total so far.
pub async fn record(
    db: &impl ConnectionTrait,
    message_id: &str,
    queue_key: &str,
) -> Result<u32, DbErr> {
    let now = Utc::now();
    entity::Entity::insert(entity::ActiveModel {
        message_id: Set(message_id.to_owned()),
        queue: Set(queue_key.to_owned()),
        deaths: Set(1),
        updated_at: Set(now),
    })
    .on_conflict(
        OnConflict::column(entity::Column::MessageId)
            .value(
                entity::Column::Deaths,
                Expr::col((entity::Entity, entity::Column::Deaths)).add(1),
            )
            .value(entity::Column::UpdatedAt, Expr::value(now))
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    let row = entity::Entity::find_by_id(message_id.to_owned())
        .one(db)
        .await?;
    Ok(row.map_or(1, |r| u32::try_from(r.deaths).unwrap_or(u32::MAX)))
}
