//! The embedded search index: tantivy in a directory (or in memory for tests), the
//! default when nothing else is configured. External versioning is kept by the index
//! itself: every document (and every delete's tombstone) stores its version, a bulk
//! request looks the current one up and drops writes that are not newer, and the whole
//! request is one commit. tantivy is synchronous: requests run on the blocking pool,
//! one writer at a time.

mod semantic;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tantivy::collector::{Count, TopDocs};
use tantivy::directory::MmapDirectory;
use tantivy::query::{AllQuery, BooleanQuery, ConstScoreQuery, EmptyQuery, Occur, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing,
    TextOptions, Value as _,
};
use tantivy::snippet::SnippetGenerator;
use tantivy::{Index, IndexReader, IndexWriter, Order, ReloadPolicy, TantivyDocument, Term};

use crate::search::{Hit, Hits, Op, Outcome, Query, Rebuild, SearchError, SearchIndex, cjk};

/// Memory the single indexing thread may buffer before it flushes a segment.
const WRITER_BYTES: usize = 32_000_000;
/// Characters of content around the matches in a highlight.
const HIGHLIGHT_CHARS: usize = 160;
const LIVE: &str = "live";
const DELETED: &str = "deleted";

#[derive(Clone, Copy)]
struct Fields {
    id: Field,
    owner: Field,
    kind: Field,
    title: Field,
    content: Field,
    tags: Field,
    created_at: Field,
    version: Field,
    state: Field,
    /// [`crate::search::semantic::encode`]d vectors, and a term marking the documents
    /// that have them (the candidates of a search by meaning).
    vectors: Field,
    embedded: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text = TextOptions::default()
        .set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(cjk::NAME)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        )
        .set_stored();
    let fields = Fields {
        id: b.add_text_field("id", STRING | STORED),
        owner: b.add_text_field("owner", STRING | STORED),
        kind: b.add_text_field("kind", STRING | STORED),
        title: b.add_text_field("title", text.clone()),
        content: b.add_text_field("content", text.clone()),
        tags: b.add_text_field("tags", text),
        // Fast: results are ordered by it.
        created_at: b.add_i64_field("created_at", STORED | FAST),
        version: b.add_i64_field("version", INDEXED | STORED),
        state: b.add_text_field("state", STRING | STORED),
        vectors: b.add_bytes_field("vectors", STORED),
        embedded: b.add_text_field("embedded", STRING),
    };
    (b.build(), fields)
}

/// Documents whose `field` holds the term `value`.
fn term_text(field: Field, value: &str) -> Box<dyn tantivy::query::Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, value),
        IndexRecordOption::Basic,
    ))
}

fn backend(e: impl std::fmt::Display) -> SearchError {
    SearchError::Backend(e.to_string())
}

pub struct EmbeddedIndex {
    inner: Arc<Inner>,
}

struct Inner {
    reader: IndexReader,
    writer: Mutex<IndexWriter>,
    f: Fields,
}

impl EmbeddedIndex {
    /// Opens the index in `dir` (created if absent), or one in memory when `None`.
    pub fn open(dir: Option<&Path>) -> Result<Self, SearchError> {
        let (schema, f) = schema();
        let index = match dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(backend)?;
                let d = MmapDirectory::open(dir).map_err(backend)?;
                match Index::open_or_create(d, schema.clone()) {
                    Ok(index) => index,
                    // An index written by an earlier version: it is derived data, so
                    // it starts over; `conveyor search reindex` fills it from the rows.
                    Err(tantivy::TantivyError::SchemaError(_)) => {
                        let aside = dir.with_extension(format!(
                            "old-schema-{}",
                            chrono::Utc::now().timestamp()
                        ));
                        tracing::warn!(
                            dir = %dir.display(),
                            moved_to = %aside.display(),
                            "search index has an older schema; moved aside and started over (run `conveyor search reindex` to fill it)"
                        );
                        std::fs::rename(dir, &aside).map_err(backend)?;
                        std::fs::create_dir_all(dir).map_err(backend)?;
                        let d = MmapDirectory::open(dir).map_err(backend)?;
                        Index::create(d, schema, Default::default()).map_err(backend)?
                    }
                    Err(e) => return Err(backend(e)),
                }
            }
            None => Index::create_in_ram(schema),
        };
        index.tokenizers().register(cjk::NAME, cjk::CjkTokenizer);
        // One indexing thread and one merge thread (tantivy's default is four), idle most of
        // the time: a node's index is small and its merges rare.
        let options = tantivy::indexer::IndexWriterOptions::builder()
            .memory_budget_per_thread(WRITER_BYTES)
            .num_worker_threads(1)
            .num_merge_threads(1)
            .build();
        let writer = index.writer_with_options(options).map_err(backend)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(backend)?;
        Ok(EmbeddedIndex {
            inner: Arc::new(Inner {
                reader,
                writer: Mutex::new(writer),
                f,
            }),
        })
    }
}

impl Inner {
    /// The stored version of `id` (a live document or a tombstone).
    fn version_of(
        &self,
        searcher: &tantivy::Searcher,
        id: &str,
    ) -> Result<Option<i64>, SearchError> {
        let q = TermQuery::new(
            Term::from_field_text(self.f.id, id),
            IndexRecordOption::Basic,
        );
        let top = searcher
            .search(&q, &TopDocs::with_limit(1).order_by_score())
            .map_err(backend)?;
        let Some((_, addr)) = top.first() else {
            return Ok(None);
        };
        let doc: TantivyDocument = searcher.doc(*addr).map_err(backend)?;
        Ok(doc.get_first(self.f.version).and_then(|v| v.as_i64()))
    }

    fn document(&self, op: &Op) -> TantivyDocument {
        let f = self.f;
        let mut doc = TantivyDocument::default();
        doc.add_text(f.id, op.id());
        doc.add_i64(f.version, op.version());
        match op {
            Op::Index(d) => {
                doc.add_text(f.owner, &d.owner);
                doc.add_text(f.kind, &d.kind);
                doc.add_text(f.title, &d.title);
                doc.add_text(f.content, &d.content);
                for tag in &d.tags {
                    doc.add_text(f.tags, tag);
                }
                doc.add_i64(f.created_at, d.created_at.timestamp_millis());
                doc.add_text(f.state, LIVE);
                if !d.vectors.is_empty() {
                    doc.add_bytes(f.vectors, &crate::search::semantic::encode(&d.vectors));
                    doc.add_text(f.embedded, semantic::EMBEDDED);
                }
            }
            Op::Delete { .. } => doc.add_text(f.state, DELETED),
        }
        doc
    }

    fn bulk(&self, ops: Vec<Op>) -> Result<Vec<Outcome>, SearchError> {
        let mut writer = self
            .writer
            .lock()
            .map_err(|_| SearchError::Backend("index writer poisoned".into()))?;
        let searcher = self.reader.searcher();
        // Versions written earlier in this request (not yet visible to the searcher).
        let mut written: HashMap<String, i64> = HashMap::new();
        let mut out = Vec::with_capacity(ops.len());
        for op in &ops {
            let current = match written.get(op.id()) {
                Some(v) => Some(*v),
                None => self.version_of(&searcher, op.id())?,
            };
            if current.is_some_and(|v| op.version() <= v) {
                out.push(Outcome::Stale);
                continue;
            }
            // A delete by term removes what was added before it, this request included.
            writer.delete_term(Term::from_field_text(self.f.id, op.id()));
            match writer.add_document(self.document(op)) {
                Ok(_) => {
                    written.insert(op.id().to_owned(), op.version());
                    out.push(Outcome::Done);
                }
                Err(e) => out.push(Outcome::Failed {
                    transient: false,
                    reason: e.to_string(),
                }),
            }
        }
        writer.commit().map_err(backend)?;
        self.reader.reload().map_err(backend)?;
        Ok(out)
    }

    fn search(&self, q: &Query) -> Result<Hits, SearchError> {
        if let Some(vector) = &q.semantic {
            return self.search_semantic(q, vector);
        }
        let f = self.f;
        let term = term_text;
        // The owner and liveness filters are always applied, whatever the text says.
        let mut clauses = vec![
            (Occur::Must, term(f.owner, &q.owner)),
            (Occur::Must, term(f.state, LIVE)),
        ];
        if let Some(kind) = &q.kind {
            clauses.push((Occur::Must, term(f.kind, kind)));
        }
        // Words only, analysed as the index analyses them: whatever a user types is
        // never query syntax (fields, ranges, wildcards). Every word must match, in any
        // of the text fields; no score: statistics of the whole index would let one
        // tenant read other tenants' words from the order of its own results.
        let words = super::query_words(&q.text);
        let text: Option<Box<dyn tantivy::query::Query>> = if q.text.trim().is_empty() {
            None
        } else if words.is_empty() {
            Some(Box::new(EmptyQuery))
        } else {
            let each_word = words.iter().map(|w| {
                let anywhere = [f.title, f.content, f.tags]
                    .into_iter()
                    .map(|field| (Occur::Should, term_text(field, w)))
                    .collect();
                (
                    Occur::Must,
                    Box::new(BooleanQuery::new(anywhere)) as Box<dyn tantivy::query::Query>,
                )
            });
            Some(Box::new(BooleanQuery::new(each_word.collect())))
        };
        match &text {
            Some(t) => clauses.push((Occur::Must, t.box_clone())),
            None => clauses.push((Occur::Must, Box::new(AllQuery))),
        }
        let query = ConstScoreQuery::new(Box::new(BooleanQuery::new(clauses)), 1.0);
        let searcher = self.reader.searcher();
        // Newest first, as the Elasticsearch adapter orders.
        let (total, top) = searcher
            .search(
                &query,
                &(
                    Count,
                    TopDocs::with_limit(q.limit.max(1))
                        .and_offset(q.offset)
                        .order_by_fast_field::<i64>("created_at", Order::Desc),
                ),
            )
            .map_err(backend)?;
        // Every word weighs the same: tantivy's own generator weighs a word by how rare it
        // is in the whole index, and which fragment it picks would tell other tenants' words.
        let snippets = if words.is_empty() {
            None
        } else {
            let weights = words.iter().map(|w| (w.clone(), 1.0)).collect();
            let tokenizer = searcher
                .index()
                .tokenizer_for_field(f.content)
                .map_err(backend)?;
            Some(SnippetGenerator::new(
                weights,
                tokenizer,
                f.content,
                HIGHLIGHT_CHARS,
            ))
        };
        let mut hits = Vec::with_capacity(top.len());
        for (_, addr) in top {
            let doc: TantivyDocument = searcher.doc(addr).map_err(backend)?;
            let highlight = snippets.as_ref().map_or_else(String::new, |g| {
                let mut s = g.snippet_from_doc(&doc);
                s.set_snippet_prefix_postfix("<em>", "</em>");
                s.to_html()
            });
            hits.push(self.hit(&doc, highlight, None));
        }
        Ok(Hits {
            total: total as u64,
            hits,
        })
    }

    /// A stored document as a search result.
    fn hit(&self, doc: &TantivyDocument, highlight: String, score: Option<f32>) -> Hit {
        let f = self.f;
        let text_of = |field: Field| {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        Hit {
            id: text_of(f.id),
            kind: text_of(f.kind),
            title: text_of(f.title),
            tags: doc
                .get_all(f.tags)
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            created_at: doc
                .get_first(f.created_at)
                .and_then(|v| v.as_i64())
                .and_then(DateTime::<Utc>::from_timestamp_millis)
                .unwrap_or_default(),
            version: doc
                .get_first(f.version)
                .and_then(|v| v.as_i64())
                .unwrap_or_default(),
            highlight,
            score,
        }
    }
}

#[async_trait]
impl SearchIndex for EmbeddedIndex {
    async fn bulk(&self, ops: Vec<Op>) -> Result<Vec<Outcome>, SearchError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || inner.bulk(ops))
            .await
            .map_err(backend)?
    }

    async fn search(&self, query: &Query) -> Result<Hits, SearchError> {
        let (inner, query) = (self.inner.clone(), query.clone());
        tokio::task::spawn_blocking(move || inner.search(&query))
            .await
            .map_err(backend)?
    }

    async fn ping(&self) -> Result<(), SearchError> {
        Ok(())
    }

    /// The embedded index has one directory and no alias: a rebuild writes every row
    /// into it again, in place. The version fence makes that idempotent (rows already at
    /// their version are stale, deletes leave their tombstones), so it repairs a missed
    /// write without a second copy of the index.
    async fn rebuild(&self) -> Result<Box<dyn Rebuild>, SearchError> {
        Ok(Box::new(InPlace {
            index: EmbeddedIndex {
                inner: self.inner.clone(),
            },
        }))
    }
}

struct InPlace {
    index: EmbeddedIndex,
}

#[async_trait]
impl Rebuild for InPlace {
    fn target(&self) -> &str {
        "embedded (in place)"
    }

    async fn bulk(&self, ops: Vec<Op>) -> Result<Vec<Outcome>, SearchError> {
        self.index.bulk(ops).await
    }

    async fn swap(self: Box<Self>) -> Result<Vec<String>, SearchError> {
        Ok(Vec::new())
    }
}
