//! Generated files reserved before their bytes are stored: the quota is checked (and
//! taken, in one conditional update) while nothing is in the store yet, so a task never
//! stores what its owner has no room for. Each reserved file is a PENDING row of its task
//! holding its bytes; the step's commit makes it READY ([`super::record_generated`]), a
//! failed step gives it back ([`release`]), and one nobody settled (a crash, a fenced
//! commit) is collected as abandoned after `storage.pending_ttl_secs`, its bytes with it.

use chrono::Utc;
use sea_orm::{
    ActiveValue::Set, ColumnTrait as _, ConnectionTrait, DatabaseConnection, DbErr,
    EntityTrait as _, QueryFilter as _, TransactionTrait as _,
};

use super::entity::object::{ActiveModel, Column, Entity};
use super::{GENERATED, GeneratedFile, Object, ObjectStatus, usage};
use crate::storage::Key;

/// A file a task is about to store: where, and how many bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub key: Key,
    pub size: u64,
}

/// Reserves `files`' bytes from `user`'s usage and holds them in PENDING rows of
/// `task_id`, all or none: `false` (nothing reserved) when they would take the user past
/// `quota`. What an earlier attempt of the same task left reserved at the same keys is
/// given back first (a retry writes the same keys); a key another row holds already is
/// counted there and not again.
pub async fn reserve(
    db: &DatabaseConnection,
    user: &str,
    task_id: &str,
    files: &[Planned],
    quota: u64,
) -> Result<bool, DbErr> {
    let txn = db.begin().await?;
    let keys: Vec<String> = files.iter().map(|f| f.key.to_string()).collect();
    release_in(&txn, task_id, &keys).await?;
    let mut fresh = Vec::new();
    for f in files {
        if super::by_key(&txn, &f.key.to_string()).await?.is_none() {
            fresh.push(f);
        }
    }
    let total: u64 = fresh.iter().map(|f| f.size).sum();
    if !usage::reserve(&txn, user, total, quota).await? {
        txn.rollback().await?;
        return Ok(false);
    }
    let now = Utc::now();
    for f in fresh {
        Entity::insert(ActiveModel {
            id: Set(uuid::Uuid::now_v7().to_string()),
            user_id: Set(user.to_owned()),
            purpose: Set(GENERATED.to_owned()),
            status: Set(ObjectStatus::Pending),
            store_key: Set(Some(f.key.to_string())),
            size: Set(0),
            reserved: Set(f.size as i64),
            content_type: Set(None),
            sha256: Set(None),
            width: Set(None),
            height: Set(None),
            duration_ms: Set(None),
            reason: Set(None),
            task_id: Set(Some(task_id.to_owned())),
            created_at: Set(now),
            updated_at: Set(now),
            deleted_at: Set(None),
            purge_at: Set(None),
        })
        .exec_without_returning(&txn)
        .await?;
    }
    txn.commit().await?;
    Ok(true)
}

/// Gives back what `task_id` reserved at `keys` and did not store (its step failed):
/// the rows go, their bytes return to the quota. Bytes already written there are
/// objects no row knows, which the collector removes after its grace.
pub async fn release(db: &DatabaseConnection, task_id: &str, keys: &[String]) -> Result<(), DbErr> {
    let txn = db.begin().await?;
    release_in(&txn, task_id, keys).await?;
    txn.commit().await
}

async fn release_in(
    db: &impl ConnectionTrait,
    task_id: &str,
    keys: &[String],
) -> Result<(), DbErr> {
    if keys.is_empty() {
        return Ok(());
    }
    let held = Entity::find()
        .filter(Column::TaskId.eq(task_id))
        .filter(Column::Status.eq(ObjectStatus::Pending))
        .filter(Column::StoreKey.is_in(keys.iter().cloned()))
        .all(db)
        .await?;
    for row in held {
        let gone = Entity::delete_many()
            .filter(Column::Id.eq(&row.id))
            .filter(Column::Status.eq(ObjectStatus::Pending))
            .exec(db)
            .await?;
        if gone.rows_affected == 1 {
            usage::release(db, &row.user_id, row.reserved).await?;
        }
    }
    Ok(())
}

/// The PENDING row `row` (reserved by its task) holds `f` now: READY with what the write
/// measured; its reservation becomes its size (the difference goes to or from the
/// quota, as an upload's does). `false`: it was no longer PENDING.
pub(super) async fn settle(
    db: &impl ConnectionTrait,
    row: &Object,
    f: &GeneratedFile,
) -> Result<bool, DbErr> {
    let measured = super::Measured {
        store_key: None,
        size: f.size as i64,
        content_type: &f.content_type,
        sha256: &f.sha256,
        dimensions: f.dimensions,
        at: Utc::now(),
    };
    super::make_ready(db, row, &measured).await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::storage::records::{Dimensions, ObjectStatus};

    async fn db() -> DatabaseConnection {
        let db = crate::db::connect_url("sqlite::memory:", 1).await.unwrap();
        crate::db::migrate(&db).await.unwrap();
        db
    }

    fn planned(name: &str, size: u64) -> Planned {
        Planned {
            key: Key::new("u1", "generated", name, "wav").unwrap(),
            size,
        }
    }

    fn stored(p: &Planned) -> GeneratedFile {
        GeneratedFile {
            key: p.key.to_string(),
            size: p.size,
            content_type: "audio/x-wav".into(),
            sha256: "00".into(),
            dimensions: Dimensions::default(),
        }
    }

    /// All or none within the quota; the commit makes the rows READY without counting
    /// them twice; a failed step's reservation goes back; a retry's replaces its
    /// earlier one.
    #[tokio::test]
    async fn generated_files_are_reserved_within_the_quota_before_they_are_stored() {
        let db = db().await;
        usage::add(&db, "u1", 100).await.unwrap();
        let files = [planned("t1-a", 300), planned("t1-b", 400)];
        // 100 + 700 > 750: nothing reserved, nothing held.
        assert!(!reserve(&db, "u1", "t1", &files, 750).await.unwrap());
        assert_eq!(usage::used(&db, "u1").await.unwrap(), 100);
        assert!(
            super::super::of_tasks(&db, &["t1".into()])
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            super::super::by_key(&db, &files[0].key.to_string())
                .await
                .unwrap()
                .is_none()
        );
        // Room for it: held, not yet the task's files.
        assert!(reserve(&db, "u1", "t1", &files, 800).await.unwrap());
        assert_eq!(usage::used(&db, "u1").await.unwrap(), 800);
        assert!(
            super::super::of_tasks(&db, &["t1".into()])
                .await
                .unwrap()
                .is_empty()
        );
        // A retry of the step reserves again: the earlier reservation is replaced.
        assert!(reserve(&db, "u1", "t1", &files, 800).await.unwrap());
        assert_eq!(usage::used(&db, "u1").await.unwrap(), 800);
        // The commit: READY, counted once (a redelivered commit changes nothing).
        let out: Vec<GeneratedFile> = files.iter().map(stored).collect();
        for _ in 0..2 {
            super::super::record_generated(&db, "u1", "t1", &out)
                .await
                .unwrap();
        }
        assert_eq!(usage::used(&db, "u1").await.unwrap(), 800);
        let rows = super::super::of_tasks(&db, &["t1".into()]).await.unwrap();
        assert_eq!(rows.len(), 2);
        assert!(
            rows.iter()
                .all(|r| r.status == ObjectStatus::Ready && r.size == r.reserved)
        );
        // A failed step gives its reservation back; a READY file is not touched.
        let more = [planned("t2-a", 50)];
        assert!(reserve(&db, "u1", "t2", &more, 900).await.unwrap());
        assert_eq!(usage::used(&db, "u1").await.unwrap(), 850);
        let keys: Vec<String> = more
            .iter()
            .chain(&files)
            .map(|p| p.key.to_string())
            .collect();
        release(&db, "t2", &keys).await.unwrap();
        release(&db, "t1", &keys).await.unwrap();
        assert_eq!(usage::used(&db, "u1").await.unwrap(), 800);
    }
}
