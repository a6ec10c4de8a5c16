//! What is stored, in the database: a `media_objects` row per file (owner, key, kind,
//! size, checksum, dimensions, status) and each tenant's bytes ([`usage`]). Rows are
//! written in the caller's transaction where an effect must happen with them (a task's
//! generated files with its material), so a file is counted exactly once.

pub mod entity;
pub mod reserved;
mod status;
pub mod usage;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Condition, Expr, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait as _, ConnectionTrait, DbErr, EntityTrait as _, QueryFilter as _,
    QueryOrder as _, QuerySelect as _, TryIntoModel as _,
};

use super::key::Key;
use super::write::Written;
pub use entity::object::Model as Object;
use entity::object::{ActiveModel, Column, Entity};
pub use status::ObjectStatus;

/// The purpose of files the platform generated (as opposed to uploads).
pub const GENERATED: &str = "generated";

/// What is known of a file's shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Dimensions {
    pub width: Option<i32>,
    pub height: Option<i32>,
    pub duration_ms: Option<i64>,
}

/// A file a task generated, as its executor reports it (in the task's result JSON).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GeneratedFile {
    pub key: String,
    pub size: u64,
    pub content_type: String,
    pub sha256: String,
    #[serde(flatten)]
    pub dimensions: Dimensions,
}

impl GeneratedFile {
    pub fn new(written: &Written, dimensions: Dimensions) -> Self {
        GeneratedFile {
            key: written.key.to_string(),
            size: written.size,
            content_type: written.kind.content_type.to_owned(),
            sha256: written.sha256.clone(),
            dimensions,
        }
    }
}

/// A new upload, PENDING, holding `reserved` bytes of its owner's quota (already
/// reserved by the caller with [`usage::reserve`]).
pub async fn create_pending(
    db: &impl ConnectionTrait,
    user: &str,
    purpose: &str,
    key: Option<&Key>,
    reserved: u64,
    content_type: Option<&str>,
) -> Result<Object, DbErr> {
    let id = uuid::Uuid::now_v7().to_string();
    let declared = Declared {
        content_type,
        sha256: None,
    };
    create_pending_with_id(db, &id, user, purpose, key, reserved, declared).await
}

/// What a presigned upload's client declared its bytes to be, checked at completion.
#[derive(Debug, Clone, Copy, Default)]
pub struct Declared<'a> {
    pub content_type: Option<&'a str>,
    /// Hex SHA-256 (lower case), if declared; kept in `sha256` until the bytes are read.
    pub sha256: Option<&'a str>,
}

/// [`create_pending`] with the id chosen by the caller (whose key names it).
pub async fn create_pending_with_id(
    db: &impl ConnectionTrait,
    id: &str,
    user: &str,
    purpose: &str,
    key: Option<&Key>,
    reserved: u64,
    declared: Declared<'_>,
) -> Result<Object, DbErr> {
    let now = Utc::now();
    let row = ActiveModel {
        id: Set(id.to_owned()),
        user_id: Set(user.to_owned()),
        purpose: Set(purpose.to_owned()),
        status: Set(ObjectStatus::Pending),
        store_key: Set(key.map(ToString::to_string)),
        size: Set(0),
        reserved: Set(reserved as i64),
        content_type: Set(declared.content_type.map(str::to_owned)),
        sha256: Set(declared.sha256.map(str::to_owned)),
        width: Set(None),
        height: Set(None),
        duration_ms: Set(None),
        reason: Set(None),
        task_id: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
        deleted_at: Set(None),
        purge_at: Set(None),
    };
    Entity::insert(row.clone())
        .exec_without_returning(db)
        .await?;
    row.try_into_model()
}

/// Records a stored file's length once something read it (ffprobe, at a video
/// analysis's submission): the next reader takes it from the row.
pub async fn set_duration(
    db: &impl ConnectionTrait,
    id: &str,
    duration_ms: i64,
) -> Result<(), DbErr> {
    Entity::update_many()
        .col_expr(Column::DurationMs, Expr::value(duration_ms))
        .filter(Column::Id.eq(id))
        .filter(Column::DurationMs.is_null())
        .exec(db)
        .await
        .map(drop)
}

/// What a stored file measured, as its row keeps it.
pub(super) struct Measured<'a> {
    /// Where it is now, when that changed (an upload's final key).
    pub store_key: Option<&'a str>,
    pub size: i64,
    pub content_type: &'a str,
    pub sha256: &'a str,
    pub dimensions: Dimensions,
    pub at: DateTime<Utc>,
}

/// `row`, PENDING with a reservation, becomes READY with what was measured; its
/// reservation becomes its size (the difference goes back to, or is taken from, its
/// owner's quota). `false`: it was no longer PENDING (collected as abandoned meanwhile)
/// and nothing changed. Uploads and a task's generated files settle through it alike.
pub(super) async fn make_ready(
    db: &impl ConnectionTrait,
    row: &Object,
    m: &Measured<'_>,
) -> Result<bool, DbErr> {
    let mut update = Entity::update_many()
        .col_expr(Column::Status, Expr::value(ObjectStatus::Ready))
        .col_expr(Column::Size, Expr::value(m.size))
        .col_expr(Column::Reserved, Expr::value(m.size))
        .col_expr(Column::ContentType, Expr::value(m.content_type))
        .col_expr(Column::Sha256, Expr::value(m.sha256))
        .col_expr(Column::Width, Expr::value(m.dimensions.width))
        .col_expr(Column::Height, Expr::value(m.dimensions.height))
        .col_expr(Column::DurationMs, Expr::value(m.dimensions.duration_ms))
        .col_expr(Column::UpdatedAt, Expr::value(m.at));
    if let Some(key) = m.store_key {
        update = update.col_expr(Column::StoreKey, Expr::value(key));
    }
    let done = update
        .filter(Column::Id.eq(&row.id))
        .filter(Column::Status.eq(ObjectStatus::Pending))
        .exec(db)
        .await?;
    if done.rows_affected != 1 {
        return Ok(false);
    }
    let over = row.reserved - m.size;
    if over > 0 {
        usage::release(db, &row.user_id, over).await?;
    } else if over < 0 {
        usage::add(db, &row.user_id, -over).await?;
    }
    Ok(true)
}

/// The upload is stored: READY with what the write measured ([`make_ready`]). The row
/// as it is now, or `None` if it was no longer PENDING (collected as abandoned
/// meanwhile).
pub async fn mark_ready(
    db: &impl ConnectionTrait,
    upload: &Object,
    written: &Written,
    dimensions: Dimensions,
) -> Result<Option<Object>, DbErr> {
    let size = written.size as i64;
    let now = Utc::now();
    let key = written.key.to_string();
    let measured = Measured {
        store_key: Some(&key),
        size,
        content_type: written.kind.content_type,
        sha256: &written.sha256,
        dimensions,
        at: now,
    };
    if !make_ready(db, upload, &measured).await? {
        return Ok(None);
    }
    Ok(Some(Object {
        status: ObjectStatus::Ready,
        store_key: Some(key),
        size,
        reserved: size,
        content_type: Some(written.kind.content_type.to_owned()),
        sha256: Some(written.sha256.clone()),
        width: dimensions.width,
        height: dimensions.height,
        duration_ms: dimensions.duration_ms,
        updated_at: now,
        ..upload.clone()
    }))
}

/// The upload was refused: REJECTED with `reason`, its reservation given back, its
/// bytes (if any reached the store) removed by the collector at once.
pub async fn mark_rejected(
    db: &impl ConnectionTrait,
    upload: &Object,
    reason: &str,
) -> Result<(), DbErr> {
    let reason: String = reason.chars().take(500).collect();
    let now = Utc::now();
    let done = Entity::update_many()
        .col_expr(Column::Status, Expr::value(ObjectStatus::Rejected))
        .col_expr(Column::Reason, Expr::value(reason))
        .col_expr(Column::Reserved, Expr::value(0i64))
        .col_expr(Column::UpdatedAt, Expr::value(now))
        .filter(Column::Id.eq(&upload.id))
        .filter(Column::Status.eq(ObjectStatus::Pending))
        .exec(db)
        .await?;
    // Given back once: a completion that lost a race to another (READY or REJECTED
    // already) has no reservation left to give.
    if done.rows_affected != 1 {
        return Ok(());
    }
    usage::release(db, &upload.user_id, upload.reserved).await
}

/// `user`'s file `id`, unless deleted. Another tenant's id reads as absent.
pub async fn find(
    db: &impl ConnectionTrait,
    user: &str,
    id: &str,
) -> Result<Option<Object>, DbErr> {
    Entity::find_by_id(id.to_owned())
        .filter(Column::UserId.eq(user))
        .filter(Column::DeletedAt.is_null())
        .one(db)
        .await
}

/// `user`'s uploads (not generated files), newest first, before `cursor`.
pub async fn list_uploads(
    db: &impl ConnectionTrait,
    user: &str,
    cursor: Option<&str>,
    limit: u64,
) -> Result<Vec<Object>, DbErr> {
    let mut q = Entity::find()
        .filter(Column::UserId.eq(user))
        .filter(Column::Purpose.ne(GENERATED))
        .filter(Column::DeletedAt.is_null())
        .order_by_desc(Column::Id)
        .limit(limit);
    if let Some(c) = cursor {
        q = q.filter(Column::Id.lt(c));
    }
    q.all(db).await
}

/// The live row holding `key`, if any.
pub async fn by_key(db: &impl ConnectionTrait, key: &str) -> Result<Option<Object>, DbErr> {
    Entity::find()
        .filter(Column::StoreKey.eq(key))
        .filter(Column::DeletedAt.is_null())
        .one(db)
        .await
}

/// Deletes `user`'s upload `id`: invisible now, bytes removed after `grace`. `false`: no
/// such upload of theirs (generated files go with their material instead).
pub async fn delete_upload(
    db: &impl ConnectionTrait,
    user: &str,
    id: &str,
    grace: chrono::Duration,
) -> Result<bool, DbErr> {
    let now = Utc::now();
    let done = Entity::update_many()
        .col_expr(Column::DeletedAt, Expr::value(now))
        .col_expr(Column::PurgeAt, Expr::value(now + grace))
        .col_expr(Column::UpdatedAt, Expr::value(now))
        .filter(Column::Id.eq(id))
        .filter(Column::UserId.eq(user))
        .filter(Column::Purpose.ne(GENERATED))
        .filter(Column::DeletedAt.is_null())
        .exec(db)
        .await?;
    Ok(done.rows_affected == 1)
}

/// Records a task's generated files (READY) and counts them in its owner's usage, in
/// the caller's transaction. A file its task reserved before storing it ([`reserved`])
/// is counted already: its PENDING row becomes READY. A file recorded before (a
/// redelivered commit) is skipped.
pub async fn record_generated(
    db: &impl ConnectionTrait,
    user: &str,
    task_id: &str,
    files: &[GeneratedFile],
) -> Result<(), DbErr> {
    let now = Utc::now();
    for f in files {
        if let Some(row) = by_key(db, &f.key).await? {
            if row.status == ObjectStatus::Pending && row.task_id.as_deref() == Some(task_id) {
                reserved::settle(db, &row, f).await?;
            }
            continue;
        }
        let size = f.size as i64;
        Entity::insert(ActiveModel {
            id: Set(uuid::Uuid::now_v7().to_string()),
            user_id: Set(user.to_owned()),
            purpose: Set(GENERATED.to_owned()),
            status: Set(ObjectStatus::Ready),
            store_key: Set(Some(f.key.clone())),
            size: Set(size),
            reserved: Set(size),
            content_type: Set(Some(f.content_type.clone())),
            sha256: Set(Some(f.sha256.clone())),
            width: Set(f.dimensions.width),
            height: Set(f.dimensions.height),
            duration_ms: Set(f.dimensions.duration_ms),
            reason: Set(None),
            task_id: Set(Some(task_id.to_owned())),
            created_at: Set(now),
            updated_at: Set(now),
            deleted_at: Set(None),
            purge_at: Set(None),
        })
        .on_conflict(
            OnConflict::column(Column::StoreKey)
                .do_nothing_on([Column::StoreKey])
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
        usage::add(db, user, size).await?;
    }
    Ok(())
}

/// The live files `task_ids` generated (stored and recorded).
pub async fn of_tasks(
    db: &impl ConnectionTrait,
    task_ids: &[String],
) -> Result<Vec<Object>, DbErr> {
    if task_ids.is_empty() {
        return Ok(Vec::new());
    }
    Entity::find()
        .filter(Column::TaskId.is_in(task_ids.iter().cloned()))
        // Not those reserved by a step still storing them (or that failed to).
        .filter(Column::Status.eq(ObjectStatus::Ready))
        .filter(Column::DeletedAt.is_null())
        .order_by_asc(Column::Id)
        .all(db)
        .await
}

/// Deletes the files `task_id` generated (its material was deleted), bytes after `grace`.
pub async fn delete_of_task(
    db: &impl ConnectionTrait,
    task_id: &str,
    grace: chrono::Duration,
) -> Result<(), DbErr> {
    let now = Utc::now();
    Entity::update_many()
        .col_expr(Column::DeletedAt, Expr::value(now))
        .col_expr(Column::PurgeAt, Expr::value(now + grace))
        .filter(Column::TaskId.eq(task_id))
        .filter(Column::DeletedAt.is_null())
        .exec(db)
        .await?;
    Ok(())
}

/// Rows whose bytes are due to go: deleted past their grace, and REJECTED uploads.
pub async fn due(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<Object>, DbErr> {
    Entity::find()
        .filter(
            Condition::any()
                .add(Column::PurgeAt.lte(now))
                .add(Column::Status.eq(ObjectStatus::Rejected)),
        )
        .limit(limit)
        .all(db)
        .await
}

/// Uploads still PENDING since before `before`: abandoned.
pub async fn abandoned(
    db: &impl ConnectionTrait,
    before: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<Object>, DbErr> {
    Entity::find()
        .filter(Column::Status.eq(ObjectStatus::Pending))
        .filter(Column::CreatedAt.lt(before))
        .limit(limit)
        .all(db)
        .await
}

/// Removes the row and gives its bytes back to the quota (its object is gone already).
pub async fn purge(db: &impl ConnectionTrait, object: &Object) -> Result<(), DbErr> {
    let done = Entity::delete_many()
        .filter(Column::Id.eq(&object.id))
        .exec(db)
        .await?;
    if done.rows_affected == 1 {
        usage::release(db, &object.user_id, object.reserved).await?;
    }
    Ok(())
}

/// Which of `keys` a row (live or going) holds: the orphan sweep leaves those alone.
pub async fn keys_known(
    db: &impl ConnectionTrait,
    keys: &[String],
) -> Result<std::collections::HashSet<String>, DbErr> {
    if keys.is_empty() {
        return Ok(Default::default());
    }
    let held: Vec<Option<String>> = Entity::find()
        .select_only()
        .column(Column::StoreKey)
        .filter(Column::StoreKey.is_in(keys.iter().cloned()))
        .into_tuple()
        .all(db)
        .await?;
    Ok(held.into_iter().flatten().collect())
}

/// Bytes held by every tenant (the `conveyor_storage_bytes` gauge).
pub async fn bytes_stored(db: &impl ConnectionTrait) -> Result<i64, DbErr> {
    use entity::usage;
    let total: Option<i64> = usage::Entity::find()
        .select_only()
        .expr(crate::db::integer_sum(db, usage::Column::Bytes))
        .into_tuple()
        .one(db)
        .await?;
    Ok(total.unwrap_or(0))
}
