//! Materials: made of AI tasks' outputs ([`super::events`]), listed, edited and (softly)
//! deleted by their owners. Every change increments the row's version and writes a `search.sync` message through
//! the outbox in the same transaction, so the index hears of every committed change and
//! of nothing that rolled back.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait as _};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect, TransactionTrait,
};

use super::entity::material;
use super::messages::{MAX_CHANGES, SyncMessage, SyncOp};
use super::queues::SEARCH_SYNC;
use crate::broker::Target;
use crate::outbox::{self, OutboxError};
use crate::search::{Doc, Op};

pub type Material = material::Model;

/// The longest title and tag, the most tags (validated by the routes; kept here so the
/// title derived from a prompt fits too).
pub const MAX_TITLE_CHARS: usize = 200;
pub const MAX_TAGS: usize = 20;
pub const MAX_TAG_CHARS: usize = 50;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Db(#[from] DbErr),
    #[error(transparent)]
    Outbox(#[from] OutboxError),
}

/// A material an AI task produced.
pub struct NewMaterial {
    pub user_id: String,
    pub task_id: String,
    pub kind: String,
    /// Derived from the prompt (cut to [`MAX_TITLE_CHARS`]); the owner may change it.
    pub title: String,
    pub content: String,
    /// What it is found by in a search by meaning (a video's summary and transcript).
    pub vectors: Option<crate::search::semantic::Embedded>,
}

/// What an owner may change.
#[derive(Debug, Default)]
pub struct Patch {
    pub title: Option<String>,
    pub tags: Option<Vec<String>>,
}

/// The title a prompt gives: its first line, cut at a character boundary.
pub fn title_of(prompt: &str) -> String {
    let line = prompt.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    line.trim().chars().take(MAX_TITLE_CHARS).collect()
}

/// Inserts a material (version 1) and its sync message, inside the caller's transaction.
pub async fn create(txn: &impl ConnectionTrait, new: NewMaterial) -> Result<Material, StoreError> {
    let mut rows = create_many(txn, vec![new]).await?;
    rows.pop()
        .ok_or_else(|| StoreError::Db(DbErr::Custom("material not created".into())))
}

/// [`create`] for several materials: one insert for the rows, one for their sync
/// messages (a batch of finished tasks).
pub async fn create_many(
    txn: &impl ConnectionTrait,
    new: Vec<NewMaterial>,
) -> Result<Vec<Material>, StoreError> {
    if new.is_empty() {
        return Ok(Vec::new());
    }
    let now = Utc::now();
    let mut vectors = Vec::new();
    let rows: Vec<Material> = new
        .into_iter()
        .map(|new| {
            let id = uuid::Uuid::now_v7().to_string();
            if let Some(v) = new.vectors {
                vectors.push((id.clone(), v));
            }
            material::Model {
                id,
                user_id: new.user_id,
                task_id: new.task_id,
                kind: new.kind,
                content: new.content,
                title: title_of(&new.title),
                tags: "[]".into(),
                version: 1,
                created_at: now,
                updated_at: Some(now),
                deleted_at: None,
            }
        })
        .collect();
    material::Entity::insert_many(rows.iter().map(|row| material::ActiveModel {
        id: Set(row.id.clone()),
        user_id: Set(row.user_id.clone()),
        task_id: Set(row.task_id.clone()),
        kind: Set(row.kind.clone()),
        content: Set(row.content.clone()),
        title: Set(row.title.clone()),
        tags: Set(row.tags.clone()),
        version: Set(row.version),
        created_at: Set(row.created_at),
        updated_at: Set(row.updated_at),
        deleted_at: Set(None),
    }))
    .exec_without_returning(txn)
    .await?;
    let vectors: Vec<(&str, &crate::search::semantic::Embedded)> =
        vectors.iter().map(|(id, v)| (id.as_str(), v)).collect();
    super::vectors::write(txn, &vectors).await?;
    announce_many(txn, &rows).await?;
    Ok(rows)
}

/// Writes the row's `search.sync` message into the outbox.
async fn announce(txn: &impl ConnectionTrait, row: &Material) -> Result<(), StoreError> {
    announce_many(txn, std::slice::from_ref(row)).await
}

/// Writes the rows' `search.sync` changes into the outbox, in one insert: as one
/// message (of at most [`MAX_CHANGES`] each), since they commit together.
async fn announce_many(txn: &impl ConnectionTrait, rows: &[Material]) -> Result<(), StoreError> {
    let changes: Vec<SyncMessage> = rows
        .iter()
        .map(|row| SyncMessage {
            material_id: row.id.clone(),
            op: if row.deleted_at.is_some() {
                SyncOp::Delete
            } else {
                SyncOp::Upsert
            },
            version: row.version,
        })
        .collect();
    let messages: Vec<(Target, crate::broker::Envelope)> = changes
        .chunks(MAX_CHANGES)
        .filter_map(SyncMessage::envelope_of)
        .map(|e| (Target::Queue(&SEARCH_SYNC), e))
        .collect();
    // A few ids each: far below any payload limit.
    outbox::enqueue_many(txn, &messages, usize::MAX).await?;
    Ok(())
}

/// The material a task's output became, deleted or not.
pub async fn material_of(
    db: &impl ConnectionTrait,
    task_id: &str,
) -> Result<Option<Material>, DbErr> {
    material::Entity::find()
        .filter(material::Column::TaskId.eq(task_id))
        .one(db)
        .await
}

/// The owner's live material `id`.
pub async fn get_owned(
    db: &impl ConnectionTrait,
    user_id: &str,
    id: &str,
) -> Result<Option<Material>, DbErr> {
    material::Entity::find_by_id(id.to_owned())
        .filter(material::Column::UserId.eq(user_id))
        .filter(material::Column::DeletedAt.is_null())
        .one(db)
        .await
}

/// The owner's live materials, newest first, after `cursor` (a material id).
pub async fn list(
    db: &impl ConnectionTrait,
    user_id: &str,
    cursor: Option<&str>,
    limit: u64,
) -> Result<Vec<Material>, DbErr> {
    let mut q = material::Entity::find()
        .filter(material::Column::UserId.eq(user_id))
        .filter(material::Column::DeletedAt.is_null())
        .order_by_desc(material::Column::Id)
        .limit(limit);
    if let Some(c) = cursor {
        q = q.filter(material::Column::Id.lt(c));
    }
    q.all(db).await
}

/// Applies `patch` to the owner's live material: a new version and its sync message in
/// one transaction. `None` when there is no such material.
pub async fn update(
    db: &DatabaseConnection,
    user_id: &str,
    id: &str,
    patch: Patch,
) -> Result<Option<Material>, StoreError> {
    let mut update = material::Entity::update_many()
        .col_expr(
            material::Column::Version,
            Expr::col(material::Column::Version).add(1),
        )
        .col_expr(material::Column::UpdatedAt, Expr::value(Utc::now()));
    if let Some(title) = patch.title {
        update = update.col_expr(material::Column::Title, Expr::value(title));
    }
    if let Some(tags) = patch.tags {
        update = update.col_expr(
            material::Column::Tags,
            Expr::value(serde_json::json!(tags).to_string()),
        );
    }
    change(db, user_id, id, update, None).await
}

/// Soft-deletes the owner's live material: a new version, `deleted_at`, and a delete
/// message. `None` when there is no such material.
///
/// Its task's generated files are deleted in the same transaction (their bytes go after
/// `file_grace`, by the storage collector).
pub async fn delete(
    db: &DatabaseConnection,
    user_id: &str,
    id: &str,
    file_grace: chrono::Duration,
) -> Result<Option<Material>, StoreError> {
    let now = Utc::now();
    let update = material::Entity::update_many()
        .col_expr(
            material::Column::Version,
            Expr::col(material::Column::Version).add(1),
        )
        .col_expr(material::Column::UpdatedAt, Expr::value(now))
        .col_expr(material::Column::DeletedAt, Expr::value(now));
    change(db, user_id, id, update, Some(file_grace)).await
}

/// Runs `update` on the owner's live row, reads the new row and announces it, all in
/// one transaction (the conditional UPDATE takes the row lock, so concurrent changes
/// get distinct versions).
async fn change(
    db: &DatabaseConnection,
    user_id: &str,
    id: &str,
    update: sea_orm::UpdateMany<material::Entity>,
    delete_files_after: Option<chrono::Duration>,
) -> Result<Option<Material>, StoreError> {
    let txn = db.begin().await?;
    let done = update
        .filter(material::Column::Id.eq(id))
        .filter(material::Column::UserId.eq(user_id))
        .filter(material::Column::DeletedAt.is_null())
        .exec(&txn)
        .await?;
    if done.rows_affected == 0 {
        return Ok(None);
    }
    let Some(row) = material::Entity::find_by_id(id.to_owned())
        .one(&txn)
        .await?
    else {
        return Ok(None);
    };
    announce(&txn, &row).await?;
    if let Some(grace) = delete_files_after {
        crate::storage::records::delete_of_task(&txn, &row.task_id, grace).await?;
    }
    txn.commit().await?;
    Ok(Some(row))
}

/// The rows of `ids` as they are now, deleted ones included (one query).
pub async fn load(db: &impl ConnectionTrait, ids: &[String]) -> Result<Vec<Material>, DbErr> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    material::Entity::find()
        .filter(material::Column::Id.is_in(ids.iter().cloned()))
        .all(db)
        .await
}

/// Rows (deleted ones too) after `after` in id order, for a reindex: every row, or only
/// those changed at or after `since` (the replay of what changed while it copied).
pub async fn page(
    db: &impl ConnectionTrait,
    since: Option<DateTime<Utc>>,
    after: Option<&str>,
    limit: u64,
) -> Result<Vec<Material>, DbErr> {
    let mut q = material::Entity::find()
        .order_by_asc(material::Column::Id)
        .limit(limit);
    if let Some(t) = since {
        q = q.filter(material::Column::UpdatedAt.gte(t));
    }
    if let Some(a) = after {
        q = q.filter(material::Column::Id.gt(a));
    }
    q.all(db).await
}

/// How many rows a reindex will copy.
pub async fn count(db: &impl ConnectionTrait) -> Result<u64, DbErr> {
    use sea_orm::PaginatorTrait as _;
    material::Entity::find().count(db).await
}

/// The row's tags (an empty list if the column holds anything else).
pub fn tags(row: &Material) -> Vec<String> {
    serde_json::from_str(&row.tags).unwrap_or_default()
}

/// What the index should hold for `row` (with its `vectors`): the document, or its
/// delete.
pub fn op(row: &Material, vectors: Vec<Vec<f32>>) -> Op {
    if row.deleted_at.is_some() {
        return Op::Delete {
            id: row.id.clone(),
            version: row.version,
        };
    }
    Op::Index(Doc {
        id: row.id.clone(),
        owner: row.user_id.clone(),
        kind: row.kind.clone(),
        title: row.title.clone(),
        content: row.content.clone(),
        tags: tags(row),
        created_at: row.created_at,
        version: row.version,
        vectors,
    })
}
