//! The collector: removes the bytes of deleted files past their grace and of rejected
//! uploads, gives abandoned PENDING uploads' reservations back, and removes objects no
//! row knows (a crash between the write and the row, a failed task's output, a PUT to a
//! presigned URL after its upload completed) once they are older than the grace. Only
//! objects of conveyor's own key shape under `storage.prefix` are ever candidates (S3
//! requires the prefix: a bucket may be shared). Every removal is logged and counted,
//! never silent.

use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use sea_orm::DatabaseConnection;

use super::records;
use super::{Key, Storage};

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Swept {
    /// Deleted or rejected files whose bytes and rows went.
    pub removed: u64,
    /// PENDING uploads given up on.
    pub abandoned: u64,
    /// Objects in the store that no row knew.
    pub orphans: u64,
    pub bytes_freed: u64,
}

/// Rows handled per pass and kind: a backlog drains over several passes.
const BATCH: u64 = 500;

/// One pass at `now`.
pub async fn sweep(
    db: &DatabaseConnection,
    storage: &Storage,
    now: DateTime<Utc>,
) -> anyhow::Result<Swept> {
    let mut swept = Swept::default();
    for object in records::due(db, now, BATCH).await? {
        if let Some(key) = &object.store_key {
            storage.delete(key).await?;
        }
        records::purge(db, &object).await?;
        swept.removed += 1;
        swept.bytes_freed += object.size.max(0) as u64;
    }
    let ttl = chrono::Duration::seconds(storage.settings.pending_ttl_secs as i64);
    for object in records::abandoned(db, now - ttl, BATCH).await? {
        if let Some(key) = &object.store_key {
            storage.delete(key).await?;
        }
        records::purge(db, &object).await?;
        tracing::info!(upload = %object.id, user = %object.user_id, "an upload left PENDING was abandoned");
        swept.abandoned += 1;
    }
    // Orphans: only objects older than the grace, so a write whose row is about to be
    // committed is never taken for one.
    let grace = chrono::Duration::seconds(storage.settings.delete_grace_secs as i64);
    // The store lists in pages; each page of candidates is checked against the rows in
    // one query, not one per object.
    let mut listing = storage.list(None).chunks(BATCH as usize);
    while let Some(page) = listing.next().await {
        let old: Vec<_> = page
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .filter(|o| o.last_modified <= now - grace)
            // Only what conveyor writes (`<tenant>/<purpose>/<id>.<ext>`): anything else
            // under the prefix is someone else's, and not for this collector to remove.
            .filter(|o| Key::parse(&o.path).is_ok())
            .collect();
        let paths: Vec<String> = old.iter().map(|o| o.path.clone()).collect();
        let known = records::keys_known(db, &paths).await?;
        for listed in old.into_iter().filter(|o| !known.contains(&o.path)) {
            tracing::warn!(key = %listed.path, size = listed.size, "removing an object no row knows");
            storage.delete(&listed.path).await?;
            swept.orphans += 1;
            swept.bytes_freed += listed.size;
        }
    }
    metrics::counter!("conveyor_storage_removed_total", "why" => "deleted")
        .increment(swept.removed);
    metrics::counter!("conveyor_storage_removed_total", "why" => "abandoned")
        .increment(swept.abandoned);
    metrics::counter!("conveyor_storage_removed_total", "why" => "orphan").increment(swept.orphans);
    metrics::counter!("conveyor_storage_bytes_freed_total").increment(swept.bytes_freed);
    if swept != Swept::default() {
        tracing::info!(?swept, "storage collector");
    }
    Ok(swept)
}
