//! Users, API keys and credits. Keys are 32 random bytes shown once (`cvk_…`); only
//! their SHA-256 is stored, and lookups go by that hash.

pub mod audit;
pub mod credits;
pub mod entity;
pub mod invitations;
pub mod keys;
pub mod membership;
pub mod notices;
pub mod orgs;

use chrono::Utc;
use rand::RngCore as _;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter,
    TransactionTrait,
};
use sha2::{Digest as _, Sha256};

pub use entity::user::Model as User;

/// What a user may do beyond their own things.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    /// Operators (`users create --admin`): admin routes, and every user's things.
    Admin,
}

impl User {
    pub fn role(&self) -> Role {
        if self.is_admin {
            Role::Admin
        } else {
            Role::User
        }
    }

    /// The visibility rule of every owned thing (tasks, orders, live streams): its owner
    /// sees it, and so do admins; to anyone else it does not exist (404, never 403).
    pub fn can_see(&self, owner_id: &str) -> bool {
        self.id == owner_id || self.role() == Role::Admin
    }
}

/// The marker every conveyor API key starts with.
pub const KEY_PREFIX: &str = "cvk_";

pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

fn new_key() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("{KEY_PREFIX}{}", hex::encode(bytes))
}

/// Creates a user with an initial credit grant (booked in the ledger) and one API key;
/// returns the user and the key, which is not stored anywhere.
pub async fn create(
    db: &sea_orm::DatabaseConnection,
    name: &str,
    credits: i64,
    is_admin: bool,
) -> Result<(User, String), DbErr> {
    let txn = db.begin().await?;
    let now = Utc::now();
    let user = entity::user::ActiveModel {
        id: Set(uuid::Uuid::now_v7().to_string()),
        name: Set(name.to_owned()),
        credits: Set(0),
        is_admin: Set(is_admin),
        created_at: Set(now),
        member_until: Set(None),
        org_id: Set(None),
        plan: Set(None),
        member_plan: Set(None),
    };
    let user = entity::user::Entity::insert(user)
        .exec_with_returning(&txn)
        .await?;
    let user = if credits != 0 {
        credits::grant(
            &txn,
            &user.id,
            credits,
            &format!("grant:initial:{}", user.id),
        )
        .await?;
        User { credits, ..user }
    } else {
        user
    };
    let (_, key) = keys::create(&txn, &user.id).await?;
    txn.commit().await?;
    Ok((user, key))
}

/// Locks the user's row for the caller's transaction (`FOR UPDATE`; SQLite has one
/// writer anyway) and reads it. Take it before writing ledger rows when two transactions
/// may change the same user: a ledger insert holds a shared lock on the row (its foreign
/// key), and two of them upgrading to exclusive deadlock.
pub async fn lock(txn: &impl ConnectionTrait, user_id: &str) -> Result<User, DbErr> {
    use sea_orm::QuerySelect as _;
    entity::user::Entity::find_by_id(user_id.to_owned())
        .lock(sea_orm::sea_query::LockType::Update)
        .one(txn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("user {user_id}")))
}

/// Locks the rows of `user_ids` for the caller's transaction, in id order (the order of
/// every multi-user lock, so two transactions cannot deadlock on each other).
pub async fn lock_many(
    txn: &impl ConnectionTrait,
    user_ids: &std::collections::BTreeSet<&str>,
) -> Result<(), DbErr> {
    use sea_orm::{QueryOrder as _, QuerySelect as _};
    entity::user::Entity::find()
        .select_only()
        .column(entity::user::Column::Id)
        .filter(entity::user::Column::Id.is_in(user_ids.iter().copied()))
        .order_by_asc(entity::user::Column::Id)
        .lock(sea_orm::sea_query::LockType::Update)
        .into_tuple::<String>()
        .all(txn)
        .await?;
    Ok(())
}

/// The user owning an active key, if any.
pub async fn authenticate(db: &impl ConnectionTrait, key: &str) -> Result<Option<User>, DbErr> {
    if !key.starts_with(KEY_PREFIX) {
        return Ok(None);
    }
    authenticate_hash(db, &hash_key(key)).await
}

/// The user owning the active key with this hash (callers that hashed already).
pub async fn authenticate_hash(
    db: &impl ConnectionTrait,
    key_hash: &str,
) -> Result<Option<User>, DbErr> {
    Ok(authenticate_key(db, key_hash).await?.map(|(user, _)| user))
}

/// The user owning the active key with this hash, and when the key stops working (a
/// rotated key), so a cache never trusts it longer.
/// One query: `Some(expiry)` (itself `None` for a key without one) while the key of this
/// hash lets its holder in, `None` once it is revoked or expired.
pub async fn key_expiry(
    db: &impl ConnectionTrait,
    key_hash: &str,
) -> Result<Option<Option<chrono::DateTime<Utc>>>, DbErr> {
    Ok(entity::api_key::Entity::find()
        .filter(entity::api_key::Column::KeyHash.eq(key_hash))
        .one(db)
        .await?
        .filter(|k| keys::is_live(k, Utc::now()))
        .map(|k| k.expires_at))
}

pub async fn authenticate_key(
    db: &impl ConnectionTrait,
    key_hash: &str,
) -> Result<Option<(User, Option<chrono::DateTime<Utc>>)>, DbErr> {
    let Some(api_key) = entity::api_key::Entity::find()
        .filter(entity::api_key::Column::KeyHash.eq(key_hash))
        .one(db)
        .await?
        .filter(|k| keys::is_live(k, Utc::now()))
    else {
        return Ok(None);
    };
    Ok(entity::user::Entity::find_by_id(api_key.user_id)
        .one(db)
        .await?
        .map(|user| (user, api_key.expires_at)))
}
