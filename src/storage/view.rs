//! [`FileView`]: a stored file as the API shows it, with a fresh signed URL (materials
//! and task results list their files this way).

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::records::{Object, ObjectStatus};
use super::{Key, SignedUrl, Storage, StorageError};

/// A file of a material or a task's result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FileView {
    pub id: String,
    pub content_type: Option<String>,
    pub size: i64,
    pub sha256: Option<String>,
    pub width: Option<i32>,
    pub height: Option<i32>,
    pub duration_ms: Option<i64>,
    /// A signed download URL that expires at `url_expires_at`.
    pub url: String,
    pub url_expires_at: DateTime<Utc>,
}

/// A fresh URL for `object`'s bytes, if it has any.
pub async fn url_of(storage: &Storage, object: &Object) -> Result<Option<SignedUrl>, StorageError> {
    match (&object.store_key, object.status) {
        (Some(key), ObjectStatus::Ready) => {
            Ok(Some(storage.download_url(&Key::parse(key)?).await?))
        }
        _ => Ok(None),
    }
}

impl FileView {
    /// `None` for a file without bytes (not READY).
    pub async fn of(storage: &Storage, o: Object) -> Result<Option<Self>, StorageError> {
        let Some(url) = url_of(storage, &o).await? else {
            return Ok(None);
        };
        Ok(Some(FileView {
            id: o.id,
            content_type: o.content_type,
            size: o.size,
            sha256: o.sha256,
            width: o.width,
            height: o.height,
            duration_ms: o.duration_ms,
            url: url.url,
            url_expires_at: url.expires_at,
        }))
    }

    /// Views of `objects` (those with bytes), in order.
    pub async fn all(storage: &Storage, objects: Vec<Object>) -> Result<Vec<Self>, StorageError> {
        let mut out = Vec::with_capacity(objects.len());
        for o in objects {
            out.extend(FileView::of(storage, o).await?);
        }
        Ok(out)
    }
}
