//! A search by meaning over the embedded index: every live document of the owner (and
//! kind) that has vectors is scored by its best cosine with the query's, exactly; the
//! owner filter keeps that to one tenant's library.

use tantivy::TantivyDocument;
use tantivy::collector::DocSetCollector;
use tantivy::query::{BooleanQuery, Occur};
use tantivy::schema::Value as _;

use super::{Inner, LIVE, backend, term_text};
use crate::search::semantic::best_encoded;
use crate::search::{Hits, Query, SearchError};

/// The term of [`super::Fields::embedded`] on documents with vectors.
pub(super) const EMBEDDED: &str = "yes";

impl Inner {
    pub(super) fn search_semantic(&self, q: &Query, vector: &[f32]) -> Result<Hits, SearchError> {
        let f = self.f;
        let mut clauses = vec![
            (Occur::Must, term_text(f.owner, &q.owner)),
            (Occur::Must, term_text(f.state, LIVE)),
            (Occur::Must, term_text(f.embedded, EMBEDDED)),
        ];
        if let Some(kind) = &q.kind {
            clauses.push((Occur::Must, term_text(f.kind, kind)));
        }
        let searcher = self.reader.searcher();
        let candidates = searcher
            .search(&BooleanQuery::new(clauses), &DocSetCollector)
            .map_err(backend)?;
        let mut scored: Vec<(f32, i64, TantivyDocument)> = Vec::new();
        for addr in candidates {
            let doc: TantivyDocument = searcher.doc(addr).map_err(backend)?;
            let score = doc
                .get_first(f.vectors)
                .and_then(|v| v.as_bytes())
                .and_then(|bytes| best_encoded(vector, bytes));
            if let Some(score) = score.filter(|s| *s >= q.min_score) {
                let created = doc
                    .get_first(f.created_at)
                    .and_then(|v| v.as_i64())
                    .unwrap_or_default();
                scored.push((score, created, doc));
            }
        }
        // Best first; equal scores newest first, so pages are stable.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        let total = scored.len() as u64;
        let hits = scored
            .into_iter()
            .skip(q.offset)
            .take(q.limit.max(1))
            .map(|(score, _, doc)| self.hit(&doc, String::new(), Some(score)))
            .collect();
        Ok(Hits { total, hits })
    }
}
