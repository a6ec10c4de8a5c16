//! Idempotent POSTs: `Idempotency-Key` (1-128 visible ASCII characters) plus a hash of
//! the request. The first request's response is stored in the same transaction as its
//! effect; a repeat with the same body gets that response again, a repeat with a
//! different body is 422. Keys live at least 24 hours (`purge_older_than`).
//!
//! A route takes the [`IdempotencyKey`] extractor and, when a key came, runs its effect
//! through [`once`], which does the whole find / effect / store / replay sequence.

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr,
    EntityTrait, QueryFilter,
};
use sha2::{Digest as _, Sha256};

use crate::error::ApiError;

/// The request's `Idempotency-Key`, validated; `None` when absent. A malformed one is a
/// 400 naming the header.
#[derive(Debug, Clone)]
pub struct IdempotencyKey(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        key_from(&parts.headers).map(IdempotencyKey)
    }
}

/// What [`once`] answers.
#[derive(Debug)]
pub enum Once<T> {
    /// The effect ran now: its answer, and what else it returned (to announce after
    /// the commit).
    Done {
        status: u16,
        body: serde_json::Value,
        extra: T,
    },
    /// An earlier request with this key and body ran it: its stored answer.
    Replayed {
        status: u16,
        body: serde_json::Value,
    },
}

impl<T> Once<T> {
    pub fn answer(&self) -> (u16, &serde_json::Value) {
        match self {
            Once::Done { status, body, .. } | Once::Replayed { status, body } => (*status, body),
        }
    }
}

/// Runs `effect` at most once per (user, key): a stored answer is replayed (422 if
/// `request` differs from the one it answered); otherwise `effect` runs in a new
/// transaction that also stores its answer, so the effect and its answer commit
/// together. A concurrent twin loses on the unique key and replays the winner's answer.
pub async fn once<T, F>(
    db: &DatabaseConnection,
    user_id: &str,
    key: &str,
    request: &serde_json::Value,
    effect: F,
) -> Result<Once<T>, ApiError>
where
    F: AsyncFnOnce(&DatabaseTransaction) -> Result<(u16, serde_json::Value, T), ApiError>,
{
    let request_hash = hash(request);
    if let Some(row) = find(db, user_id, key).await? {
        let (status, body) = replay(&row, &request_hash)?;
        return Ok(Once::Replayed { status, body });
    }
    let txn = crate::db::begin_read_committed(db).await?;
    let (status, body, extra) = match effect(&txn).await {
        Ok(done) => done,
        Err(e) => {
            let _ = txn.rollback().await;
            return Err(e);
        }
    };
    let stored = store(&txn, user_id, key, &request_hash, status, &body).await;
    let committed = match stored {
        Ok(()) => txn.commit().await,
        Err(e) => {
            // Release the connection before reading the winner's row (SQLite has one).
            let _ = txn.rollback().await;
            Err(e)
        }
    };
    if let Err(e) = committed {
        if let Some(row) = find(db, user_id, key).await? {
            let (status, body) = replay(&row, &request_hash)?;
            return Ok(Once::Replayed { status, body });
        }
        return Err(e.into());
    }
    Ok(Once::Done {
        status,
        body,
        extra,
    })
}

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

/// Keys are kept 48 hours (clients are promised at least 24), then trimmed.
pub const RETENTION: crate::housekeeping::Retention = crate::housekeeping::Retention {
    table: "idempotency_keys",
    keep: std::time::Duration::from_secs(48 * 3600),
    trim: |db, cutoff| Box::pin(purge_older_than(db, cutoff)),
};
