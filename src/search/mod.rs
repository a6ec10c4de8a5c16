//! The search backend seam (issue 15): a small trait the search-sync flow writes through
//! and the search API reads through, with an embedded index ([`embedded`], tantivy, the
//! default) and an Elasticsearch adapter ([`elastic`], tested against OpenSearch 2.19). Writes carry the source
//! row's version and follow external versioning: a write whose version is not above the
//! document's is *stale* and changes nothing, so the index ends at the newest version
//! whatever order the writes arrive in; a delete leaves a versioned tombstone so a late
//! update cannot bring the document back.

pub mod cjk;
pub mod elastic;
pub mod embedded;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;

/// One searchable material, as indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    pub id: String,
    /// Who may find it: every search filters on it, server-side.
    pub owner: String,
    pub kind: String,
    pub title: String,
    pub content: String,
    pub tags: Vec<String>,
    pub created_at: DateTime<Utc>,
    /// The source row's version; only a higher one replaces it.
    pub version: i64,
}

/// One write of a bulk request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Index(Doc),
    /// Deletes `id` as of `version` (the row's version at deletion).
    Delete {
        id: String,
        version: i64,
    },
}

impl Op {
    pub fn id(&self) -> &str {
        match self {
            Op::Index(d) => &d.id,
            Op::Delete { id, .. } => id,
        }
    }

    pub fn version(&self) -> i64 {
        match self {
            Op::Index(d) => d.version,
            Op::Delete { version, .. } => *version,
        }
    }
}

/// What became of one write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// The index holds this version or a newer one: dropped, not an error.
    Stale,
    /// `transient`: worth retrying (the backend was busy or away); otherwise it never
    /// will succeed (a mapping rejected the document).
    Failed {
        transient: bool,
        reason: String,
    },
}

/// A search, always within one owner's documents.
#[derive(Debug, Clone)]
pub struct Query {
    pub owner: String,
    /// Words to match in title, content and tags; empty matches everything.
    pub text: String,
    pub kind: Option<String>,
    pub offset: usize,
    pub limit: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hit {
    pub id: String,
    pub kind: String,
    pub title: String,
    pub tags: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub version: i64,
    /// A fragment of the content with the matched words in `<em>…</em>`.
    pub highlight: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hits {
    pub total: u64,
    pub hits: Vec<Hit>,
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// Not reachable or not answering: retry later.
    #[error("search backend unavailable: {0}")]
    Unavailable(String),
    #[error("search backend: {0}")]
    Backend(String),
}

#[async_trait]
pub trait SearchIndex: Send + Sync {
    /// Applies the writes in one request; one outcome per write, in order. `Err` when
    /// the request as a whole failed (nothing can be assumed written).
    async fn bulk(&self, ops: Vec<Op>) -> Result<Vec<Outcome>, SearchError>;

    async fn search(&self, query: &Query) -> Result<Hits, SearchError>;

    /// Whether the backend answers (readiness, the circuit breaker).
    async fn ping(&self) -> Result<(), SearchError>;

    /// Starts a rebuild: a fresh index beside the live one, filled through the
    /// [`Rebuild`], made live by [`Rebuild::swap`]. The live index is untouched until
    /// then, so an abandoned rebuild changes nothing searchable.
    async fn rebuild(&self) -> Result<Box<dyn Rebuild>, SearchError>;
}

/// A rebuild in progress (see [`SearchIndex::rebuild`]).
#[async_trait]
pub trait Rebuild: Send + Sync {
    /// Where the rebuild writes (an index name).
    fn target(&self) -> &str;

    /// Writes into the new index, with the same version fence as live writes.
    async fn bulk(&self, ops: Vec<Op>) -> Result<Vec<Outcome>, SearchError>;

    /// Makes the new index the live one in one atomic step and drops the old ones;
    /// answers their names.
    async fn swap(self: Box<Self>) -> Result<Vec<String>, SearchError>;
}
