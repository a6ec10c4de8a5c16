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
pub mod semantic;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;

/// One searchable material, as indexed.
#[derive(Debug, Clone, PartialEq)]
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
    /// What it is found by in a search by meaning (unit length each; none for a material
    /// that was never embedded).
    pub vectors: Vec<Vec<f32>>,
}

/// One write of a bulk request.
#[derive(Debug, Clone, PartialEq)]
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
    /// Rank by meaning instead: the query's vector (unit length). Only materials with
    /// vectors whose best cosine reaches `min_score` match, best first.
    pub semantic: Option<Vec<f32>>,
    pub min_score: f32,
    pub offset: usize,
    pub limit: usize,
}

/// The English stop words of the `cjk` analyzer (Lucene's set): never required to match.
const STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// The words of a search, analysed as the index analyses text (CJK bigrams, lowercased
/// words) less stop words: what the embedded index requires, the same words the
/// Elasticsearch `cjk` analyzer makes of the text.
pub fn query_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = cjk::tokens(text)
        .into_iter()
        .map(|t| t.text)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect();
    words.dedup();
    words
}

/// Why `text` reads as query syntax rather than words, if it does: a field query
/// (`id:x`), a wildcard (`*`), a range (`[a TO b]`, `{…}`) or an escape (`\`). A search
/// box takes words; these are refused (400) rather than quietly read as words, so a
/// client that meant syntax learns it is not supported.
pub fn query_syntax(text: &str) -> Option<&'static str> {
    if text.contains('*') {
        return Some("wildcards (*) are not supported; search for words");
    }
    if text.contains(['[', ']', '{', '}', '\\']) {
        return Some("ranges and escapes are not supported; search for words");
    }
    let field_query = text.split_whitespace().any(|word| {
        word.split_once(':').is_some_and(|(name, rest)| {
            !rest.is_empty()
                && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    });
    field_query.then_some("field queries (name:value) are not supported; search for words")
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
    /// A search by meaning: the best cosine of the material's vectors with the query's.
    pub score: Option<f32>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_syntax_is_named_and_words_are_words() {
        for syntax in [
            "id:*",
            "owner:bob",
            "tea*",
            "version:[1 TO 9]",
            "a\\b",
            "{x}",
        ] {
            assert!(query_syntax(syntax).is_some(), "{syntax}");
        }
        for words in [
            "green tea",
            "Note: buy now",
            "10:30",
            "绿茶 新品",
            "title:",
            "why?",
        ] {
            assert_eq!(query_syntax(words), None, "{words}");
        }
        assert_eq!(
            query_words("The Green TEA and 绿茶"),
            ["green", "tea", "绿茶"]
        );
    }
}
