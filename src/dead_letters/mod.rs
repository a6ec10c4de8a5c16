//! Dead letters kept for operators: recorded by the consumer runtime when it
//! dead-letters a message, listed and inspected later.

pub mod entity;

use chrono::Utc;
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
};

use crate::broker::{DeadLetterInfo, Failure};

pub use entity::Model as DeadLetter;

/// Records a dead letter; a second record of the same message at the same attempt
/// (a redelivered dead-letter decision) is ignored.
pub async fn record(
    db: &impl ConnectionTrait,
    message_id: &str,
    queue_key: &str,
    kind: &str,
    info: &DeadLetterInfo,
    history: &[Failure],
    body: &[u8],
) -> Result<(), DbErr> {
    let now = Utc::now();
    let row = entity::ActiveModel {
        message_id: Set(message_id.to_owned()),
        queue: Set(queue_key.to_owned()),
        kind: Set(kind.to_owned()),
        reason: Set(info.reason.as_str().to_owned()),
        attempts: Set(i32::try_from(info.attempts).unwrap_or(i32::MAX)),
        last_error: Set(info.last_error.clone()),
        history: Set(serde_json::to_string(history).unwrap_or_else(|_| "[]".into())),
        body: Set(String::from_utf8_lossy(body).into_owned()),
        status: Set("dead".to_owned()),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    };
    entity::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([
                entity::Column::MessageId,
                entity::Column::Queue,
                entity::Column::Attempts,
            ])
            .do_nothing_on([entity::Column::MessageId])
            .to_owned(),
        )
        .exec_without_returning(db)
        .await
        .map(|_| ())
}

/// Dead letters of one queue, newest first.
pub async fn list(
    db: &impl ConnectionTrait,
    queue_key: Option<&str>,
    limit: u64,
) -> Result<Vec<DeadLetter>, DbErr> {
    let mut q = entity::Entity::find()
        .order_by_desc(entity::Column::Id)
        .limit(limit);
    if let Some(k) = queue_key {
        q = q.filter(entity::Column::Queue.eq(k));
    }
    q.all(db).await
}
