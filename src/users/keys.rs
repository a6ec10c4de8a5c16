//! API key lifecycle: create, list, revoke, rotate. A key is shown once; only its hash is
//! stored. Revoking stops it at once in the database; running API instances drop their
//! cached identity when told (see `live::control`). Rotating issues a new key and keeps
//! the old one valid for an overlap, so clients can switch without downtime.

use chrono::{DateTime, Utc};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder};
use serde::Serialize;

use super::entity::api_key;
use super::{KEY_PREFIX, hash_key, new_key};

/// A key as listed (never the key itself).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct KeyInfo {
    pub id: String,
    /// The key's first characters, to tell keys apart.
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    /// Set when revoked: the key no longer works.
    pub revoked_at: Option<DateTime<Utc>>,
    /// Set when rotated: the key works until then.
    pub expires_at: Option<DateTime<Utc>>,
}

impl From<api_key::Model> for KeyInfo {
    fn from(k: api_key::Model) -> Self {
        KeyInfo {
            id: k.id,
            prefix: k.prefix,
            created_at: k.created_at,
            revoked_at: k.revoked_at,
            expires_at: k.expires_at,
        }
    }
}

/// A new key of `user_id`, in the caller's transaction: its row and the key, shown once.
pub async fn create(
    db: &impl ConnectionTrait,
    user_id: &str,
) -> Result<(api_key::Model, String), DbErr> {
    let key = new_key();
    let row = api_key::Model {
        id: uuid::Uuid::now_v7().to_string(),
        user_id: user_id.to_owned(),
        key_hash: hash_key(&key),
        prefix: key[..KEY_PREFIX.len() + 6].to_owned(),
        created_at: Utc::now(),
        revoked_at: None,
        expires_at: None,
    };
    api_key::Entity::insert(api_key::ActiveModel::from(row.clone()))
        .exec_without_returning(db)
        .await?;
    Ok((row, key))
}

/// The user's keys, oldest first.
pub async fn list(db: &impl ConnectionTrait, user_id: &str) -> Result<Vec<KeyInfo>, DbErr> {
    Ok(api_key::Entity::find()
        .filter(api_key::Column::UserId.eq(user_id))
        .order_by_asc(api_key::Column::Id)
        .all(db)
        .await?
        .into_iter()
        .map(KeyInfo::from)
        .collect())
}

async fn find(
    db: &impl ConnectionTrait,
    user_id: &str,
    key_id: &str,
) -> Result<Option<api_key::Model>, DbErr> {
    api_key::Entity::find_by_id(key_id.to_owned())
        .filter(api_key::Column::UserId.eq(user_id))
        .one(db)
        .await
}

/// Revokes one of the user's keys (again is a no-op); the key's row, whose hash the
/// caller announces so caches drop it. `None`: no such key of this user.
pub async fn revoke(
    db: &impl ConnectionTrait,
    user_id: &str,
    key_id: &str,
) -> Result<Option<api_key::Model>, DbErr> {
    let Some(key) = find(db, user_id, key_id).await? else {
        return Ok(None);
    };
    if key.revoked_at.is_some() {
        return Ok(Some(key));
    }
    let now = Utc::now();
    api_key::Entity::update_many()
        .col_expr(
            api_key::Column::RevokedAt,
            sea_orm::sea_query::Expr::value(now),
        )
        .filter(api_key::Column::Id.eq(key_id))
        .filter(api_key::Column::RevokedAt.is_null())
        .exec(db)
        .await?;
    Ok(Some(api_key::Model {
        revoked_at: Some(now),
        ..key
    }))
}

/// Rotates one of the user's live keys: a new key now, the old one valid for `overlap`
/// more (never longer than it already was). (new key's info, new key, old key's info,
/// old key's hash); `None`: no such live key of this user.
pub async fn rotate(
    db: &impl ConnectionTrait,
    user_id: &str,
    key_id: &str,
    overlap: std::time::Duration,
) -> Result<Option<(KeyInfo, String, KeyInfo, String)>, DbErr> {
    let now = Utc::now();
    let Some(old) = find(db, user_id, key_id).await? else {
        return Ok(None);
    };
    if old.revoked_at.is_some() || old.expires_at.is_some_and(|at| at <= now) {
        return Ok(None);
    }
    let until = chrono::Duration::from_std(overlap)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .unwrap_or(now);
    let until = old.expires_at.map_or(until, |at| at.min(until));
    api_key::Entity::update_many()
        .col_expr(
            api_key::Column::ExpiresAt,
            sea_orm::sea_query::Expr::value(until),
        )
        .filter(api_key::Column::Id.eq(key_id))
        .exec(db)
        .await?;
    let (new, key) = create(db, user_id).await?;
    let old_hash = old.key_hash.clone();
    let old = KeyInfo {
        expires_at: Some(until),
        ..old.into()
    };
    Ok(Some((new.into(), key, old, old_hash)))
}

/// Whether a key row still lets its holder in.
pub fn is_live(key: &api_key::Model, now: DateTime<Utc>) -> bool {
    key.revoked_at.is_none() && key.expires_at.is_none_or(|at| at > now)
}
