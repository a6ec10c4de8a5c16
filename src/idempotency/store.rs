//! Stored answers: the request's hash, find, store (in the effect's transaction), replay
//! (422 when the key came with another body), and the trim.

use chrono::{DateTime, Utc};
use sea_orm::{ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use sha2::{Digest as _, Sha256};

use super::entity;
use crate::error::ApiError;

pub fn hash(body: &serde_json::Value) -> String {
    hex::encode(Sha256::digest(body.to_string().as_bytes()))
}

/// A stored response for (user, key), if any.
pub async fn find(
    db: &impl ConnectionTrait,
    user_id: &str,
    key: &str,
) -> Result<Option<entity::Model>, DbErr> {
    entity::Entity::find()
        .filter(entity::Column::UserId.eq(user_id))
        .filter(entity::Column::Key.eq(key))
        .one(db)
        .await
}

/// Stores the response inside the effect's transaction; a concurrent twin fails here
/// with a unique violation and replays the winner's response instead.
pub async fn store(
    txn: &impl ConnectionTrait,
    user_id: &str,
    key: &str,
    request_hash: &str,
    status: u16,
    response: &serde_json::Value,
) -> Result<(), DbErr> {
    entity::Entity::insert(entity::ActiveModel {
        user_id: Set(user_id.to_owned()),
        key: Set(key.to_owned()),
        request_hash: Set(request_hash.to_owned()),
        status: Set(i32::from(status)),
        response: Set(response.to_string()),
        created_at: Set(Utc::now()),
        ..Default::default()
    })
    .exec_without_returning(txn)
    .await
    .map(|_| ())
}

/// The stored response, or 422 when the key was used with another request.
pub fn replay(
    row: &entity::Model,
    request_hash: &str,
) -> Result<(u16, serde_json::Value), ApiError> {
    if row.request_hash != request_hash {
        return Err(ApiError::unprocessable(
            "idempotency_key_reused",
            "this Idempotency-Key was used with a different request body".into(),
        )
        .with_field(Some("Idempotency-Key".into())));
    }
    let body = serde_json::from_str(&row.response).unwrap_or_default();
    Ok((u16::try_from(row.status).unwrap_or(200), body))
}

/// Deletes keys older than `cutoff` (callers keep at least 24 hours).
pub async fn purge_older_than(
    db: &impl ConnectionTrait,
    cutoff: DateTime<Utc>,
) -> Result<u64, DbErr> {
    Ok(entity::Entity::delete_many()
        .filter(entity::Column::CreatedAt.lt(cutoff))
        .exec(db)
        .await?
        .rows_affected)
}

/// Keys are kept 48 hours (clients are promised at least 24), then trimmed.
pub const RETENTION: crate::housekeeping::Retention = crate::housekeeping::Retention {
    table: "idempotency_keys",
    keep: std::time::Duration::from_secs(48 * 3600),
    trim: |db, cutoff| Box::pin(purge_older_than(db, cutoff)),
};
