//! What the API shows of a stored file.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::storage::records::Object;
use crate::storage::view::url_of;
use crate::storage::{Storage, StorageError};

/// An upload: its status and, once READY, a download URL that expires.
#[derive(Debug, Serialize, ToSchema)]
pub struct UploadView {
    pub id: String,
    /// `video`, `image` or `audio`.
    pub purpose: String,
    /// `PENDING` (bytes on their way), `READY`, `REJECTED` (see `reason`).
    pub status: crate::storage::records::ObjectStatus,
    /// Bytes stored (0 until READY).
    pub size: i64,
    /// Sniffed from the bytes (declared, for a presigned upload not yet completed).
    pub content_type: Option<String>,
    /// Hex SHA-256 of the bytes (for a presigned upload not yet completed: the one its
    /// client declared, if any).
    pub sha256: Option<String>,
    pub reason: Option<String>,
    pub created_at: DateTime<Utc>,
    /// A signed download URL (READY only); relative on the embedded store.
    pub url: Option<String>,
    pub url_expires_at: Option<DateTime<Utc>>,
    /// A video's length in milliseconds, once something read it (a video analysis
    /// submitted on it probes it once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
}

impl UploadView {
    pub async fn of(storage: &Storage, o: Object) -> Result<Self, StorageError> {
        let url = url_of(storage, &o).await?;
        Ok(UploadView {
            url: url.as_ref().map(|u| u.url.clone()),
            url_expires_at: url.map(|u| u.expires_at),
            id: o.id,
            purpose: o.purpose,
            status: o.status,
            size: o.size,
            content_type: o.content_type,
            sha256: o.sha256,
            reason: o.reason,
            created_at: o.created_at,
            duration_ms: o.duration_ms,
        })
    }
}
