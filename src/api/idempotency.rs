//! Idempotent POSTs: `Idempotency-Key` (1-128 visible ASCII characters) plus a hash of
//! the request. The first request's response is stored in the same transaction as its
//! effect; a repeat with the same body gets that response again, a repeat with a
//! different body is 422. Keys live at least 24 hours (`purge_older_than`).

use axum::http::HeaderMap;
use chrono::{DateTime, Utc};
use sea_orm::{ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use sha2::{Digest as _, Sha256};

use crate::error::ApiError;

pub mod entity {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "idempotency_keys")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub user_id: String,
        pub key: String,
        pub request_hash: String,
        pub status: i32,
        #[sea_orm(column_type = "Text")]
        pub response: String,
        pub created_at: DateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub const HEADER: &str = "idempotency-key";

/// The key from the headers, validated; `None` when absent.
pub fn key_from(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(v) = headers.get(HEADER) else {
        return Ok(None);
    };
    let key = v
        .to_str()
        .ok()
        .filter(|k| !k.is_empty() && k.len() <= 128 && k.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(|| {
            ApiError::bad_request(
                "Idempotency-Key",
                "must be 1 to 128 visible ASCII characters",
            )
        })?;
    Ok(Some(key.to_owned()))
}

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
        return Err(ApiError::Unprocessable {
            code: "idempotency_key_reused",
            message: "this Idempotency-Key was used with a different request body".into(),
            field: Some("Idempotency-Key".into()),
        });
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
