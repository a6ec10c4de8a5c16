//! Key and limit administration shared by the admin API and the CLI: each change is one
//! transaction with its audit record; a revocation is then announced to every API
//! instance (dropping its cached identity and closing the key's streams).

use std::sync::Arc;
use std::time::Duration;

use sea_orm::{DatabaseConnection, EntityTrait as _, TransactionTrait as _};
use serde_json::json;

use crate::broker::Broker;
use crate::limits::Overrides;
use crate::users::keys::{self, KeyInfo};
use crate::users::notices::{KeyNotice, announce};
use crate::users::{audit, entity::user};

/// What an administration call can fail on.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("no such user")]
    NoUser,
    #[error("no such key of this user (or not live, for a rotation)")]
    NoKey,
    #[error(transparent)]
    Db(#[from] sea_orm::DbErr),
}

/// `NoUser` unless the user exists.
pub async fn user_exists(db: &DatabaseConnection, user_id: &str) -> Result<(), AdminError> {
    user::Entity::find_by_id(user_id.to_owned())
        .one(db)
        .await?
        .map(|_| ())
        .ok_or(AdminError::NoUser)
}

/// A new key for the user; the key is in the answer only.
pub async fn create(
    db: &DatabaseConnection,
    actor: &str,
    user_id: &str,
) -> Result<(KeyInfo, String), AdminError> {
    user_exists(db, user_id).await?;
    let txn = db.begin().await?;
    let (row, key) = keys::create(&txn, user_id).await?;
    audit::record(
        &txn,
        actor,
        "key.create",
        &format!("user:{user_id}"),
        json!({ "key_id": row.id }),
    )
    .await?;
    txn.commit().await?;
    Ok((row.into(), key))
}

/// Revokes the key, then tells every instance (`broker`: `None` when there is no shared
/// broker to tell, e.g. the CLI beside an embedded one; caches then forget within their
/// TTL).
pub async fn revoke(
    db: &DatabaseConnection,
    broker: Option<&Arc<dyn Broker>>,
    actor: &str,
    user_id: &str,
    key_id: &str,
) -> Result<KeyInfo, AdminError> {
    let txn = db.begin().await?;
    let key = keys::revoke(&txn, user_id, key_id)
        .await?
        .ok_or(AdminError::NoKey)?;
    audit::record(
        &txn,
        actor,
        "key.revoke",
        &format!("user:{user_id}"),
        json!({ "key_id": key.id }),
    )
    .await?;
    txn.commit().await?;
    if let Some(b) = broker {
        announce(
            b.as_ref(),
            KeyNotice::KeyRevoked {
                key_hash: key.key_hash.clone(),
            },
        )
        .await;
    }
    Ok(key.into())
}

/// Rotates the key: (the new key's info, the new key, the old key's info with its end).
pub async fn rotate(
    db: &DatabaseConnection,
    broker: Option<&Arc<dyn Broker>>,
    actor: &str,
    user_id: &str,
    key_id: &str,
    overlap: Duration,
) -> Result<(KeyInfo, String, KeyInfo), AdminError> {
    let txn = db.begin().await?;
    let (new, key, old, old_hash) = keys::rotate(&txn, user_id, key_id, overlap)
        .await?
        .ok_or(AdminError::NoKey)?;
    audit::record(
        &txn,
        actor,
        "key.rotate",
        &format!("user:{user_id}"),
        json!({ "key_id": old.id, "new_key_id": new.id, "old_expires_at": old.expires_at }),
    )
    .await?;
    txn.commit().await?;
    if let Some(b) = broker {
        announce(b.as_ref(), KeyNotice::KeyChanged { key_hash: old_hash }).await;
    }
    Ok((new, key, old))
}

/// Replaces the limit overrides of the user's tenant (the user, or their organisation),
/// audited on the user or the organisation.
pub async fn set_limits(
    db: &DatabaseConnection,
    actor: &str,
    user_id: &str,
    tenant: &crate::plans::Standing,
    overrides: &Overrides,
) -> Result<(), AdminError> {
    user_exists(db, user_id).await?;
    let txn = db.begin().await?;
    // Limits count per tenant: a member's are their organisation's.
    crate::limits::overrides::save(&txn, &tenant.tenant_id, overrides).await?;
    let target = match &tenant.org_id {
        Some(org) => format!("org:{org}"),
        None => format!("user:{user_id}"),
    };
    audit::record(&txn, actor, "limits.set", &target, json!(overrides)).await?;
    txn.commit().await?;
    Ok(())
}

/// The user's keys (404 for no such user).
pub async fn list(db: &DatabaseConnection, user_id: &str) -> Result<Vec<KeyInfo>, AdminError> {
    user_exists(db, user_id).await?;
    Ok(keys::list(db, user_id).await?)
}
