//! What the materials API shows: a material as its owner sees it.

use chrono::{DateTime, Utc};

use crate::storage::view::FileView;
use serde::Serialize;

use crate::domains::search_sync::store::{self, Material};

/// A material as its owner sees it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MaterialView {
    pub id: String,
    pub task_id: String,
    pub kind: String,
    pub title: String,
    pub tags: Vec<String>,
    /// Text for text kinds; JSON (URL and metadata) for media.
    pub content: String,
    /// Incremented by every change.
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
    /// Its files (images, posters, models) with download URLs that expire; filled by
    /// `GET /v1/materials/{id}`, absent from lists.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileView>,
}

impl From<Material> for MaterialView {
    fn from(m: Material) -> Self {
        MaterialView {
            tags: store::tags(&m),
            id: m.id,
            task_id: m.task_id,
            kind: m.kind,
            title: m.title,
            content: m.content,
            version: m.version,
            created_at: m.created_at,
            updated_at: m.updated_at,
            files: Vec::new(),
        }
    }
}
