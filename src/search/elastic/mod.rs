//! The Elasticsearch adapter, on the official `elasticsearch` crate (pinned: it is an
//! alpha and brings its own reqwest 0.12; it stays inside this file). It keeps to the API
//! Elasticsearch and OpenSearch 2.x share (`_bulk`, `_search`, index creation with an
//! explicit mapping, aliases), so the tests run it against an OpenSearch node.
//!
//! Documents are written through an alias (`<alias>` → `<alias>-v1`), with the row's
//! version as an external version: the engine itself refuses a write that is not newer
//! (a 409 per item: stale), and a delete leaves a versioned tombstone.

mod answers;
mod rebuild;
mod semantic;

use async_trait::async_trait;
use elasticsearch::http::response::Response;
use elasticsearch::http::transport::Transport;
use elasticsearch::indices::{
    IndicesCreateParts, IndicesDeleteParts, IndicesExistsAliasParts, IndicesGetAliasParts,
    IndicesGetParts, IndicesPutMappingParts,
};
use elasticsearch::params::Refresh;
use elasticsearch::{BulkParts, Elasticsearch, SearchParts};
use serde_json::{Value, json};

use crate::search::{Hits, Op, Outcome, Query, Rebuild, SearchError, SearchIndex};
use answers::hit;
use answers::outcome;
use rebuild::ElasticRebuild;

pub struct ElasticIndex {
    client: Elasticsearch,
    alias: String,
    /// Make each bulk visible before answering (tests; costs throughput).
    refresh: bool,
    /// Set once the alias is known to exist: checked on first use, not at start-up, so a
    /// process starts while the engine is down and catches up when it returns.
    ensured: tokio::sync::OnceCell<()>,
}

/// The most one `_bulk` request carries (the engines' `http.max_content_length` is
/// 100 MB by default; smaller requests also keep the engine's heap calm).
const MAX_BULK_BYTES: usize = 8 << 20;

/// About how many bytes `op` takes in a bulk request (a vector's value is four bytes,
/// base64: under six characters).
fn approx_bytes(op: &Op) -> usize {
    match op {
        Op::Index(d) => {
            256 + d.title.len()
                + d.content.len()
                + d.tags.iter().map(|t| t.len() + 4).sum::<usize>()
                + d.vectors.iter().map(|v| 8 + 6 * v.len()).sum::<usize>()
        }
        Op::Delete { .. } => 128,
    }
}

pub(super) fn unavailable(e: impl std::fmt::Display) -> SearchError {
    SearchError::Unavailable(e.to_string())
}

/// A non-2xx answer as an error: 5xx and 429 are worth retrying, the rest is not.
pub(super) async fn check(r: Response) -> Result<Value, SearchError> {
    let status = r.status_code();
    let body: Value = r.json().await.map_err(unavailable)?;
    if status.is_success() {
        Ok(body)
    } else if status.is_server_error() || status.as_u16() == 429 {
        Err(SearchError::Unavailable(format!("{status}: {body}")))
    } else {
        Err(SearchError::Backend(format!("{status}: {body}")))
    }
}

/// The index's mapping: owner and kind exact, text fields with the CJK analyzer.
fn mapping() -> Value {
    let text = json!({ "type": "text", "analyzer": "cjk" });
    json!({
        "settings": { "number_of_shards": 1, "number_of_replicas": 0 },
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "owner": { "type": "keyword" },
                "kind": { "type": "keyword" },
                "title": text,
                "content": text,
                "tags": text,
                "created_at": { "type": "date", "format": "epoch_millis" },
                "version": { "type": "long" },
                "vectors": semantic::mapping(),
            }
        }
    })
}

impl ElasticIndex {
    /// A client for `url` and `alias`, without a request yet: `<alias>-v1` is created
    /// behind the alias, if the alias does not exist, on first use.
    pub fn new(url: &str, alias: &str, refresh: bool) -> Result<Self, SearchError> {
        let transport =
            Transport::single_node(url).map_err(|e| SearchError::Backend(e.to_string()))?;
        Ok(ElasticIndex {
            client: Elasticsearch::new(transport),
            alias: alias.to_owned(),
            refresh,
            ensured: tokio::sync::OnceCell::new(),
        })
    }

    /// [`ElasticIndex::new`], then makes sure the alias exists now.
    pub async fn connect(url: &str, alias: &str, refresh: bool) -> Result<Self, SearchError> {
        let index = Self::new(url, alias, refresh)?;
        index.ensured().await?;
        Ok(index)
    }

    async fn ensured(&self) -> Result<(), SearchError> {
        self.ensured
            .get_or_try_init(|| self.ensure())
            .await
            .map(|_| ())
    }

    async fn ensure(&self) -> Result<(), SearchError> {
        let exists = self
            .client
            .indices()
            .exists_alias(IndicesExistsAliasParts::Name(&[&self.alias]))
            .send()
            .await
            .map_err(unavailable)?;
        if exists.status_code().is_success() {
            // An index made before vectors were: the field is added (adding a field is
            // allowed on a live index, and repeating it changes nothing).
            let r = self
                .client
                .indices()
                .put_mapping(IndicesPutMappingParts::Index(&[&self.alias]))
                .body(json!({ "properties": { "vectors": semantic::mapping() } }))
                .send()
                .await
                .map_err(unavailable)?;
            return check(r).await.map(|_| ());
        }
        let name = format!("{}-v1", self.alias);
        let mut body = mapping();
        body["aliases"] = json!({ self.alias.clone(): {} });
        let r = self
            .client
            .indices()
            .create(IndicesCreateParts::Index(&name))
            .body(body)
            .send()
            .await
            .map_err(unavailable)?;
        match check(r).await {
            Ok(_) => Ok(()),
            // Another process created it first.
            Err(SearchError::Backend(e)) if e.contains("resource_already_exists") => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Deletes the indices behind the alias (test clean-up, decommissioning).
    pub async fn drop_all(&self) -> Result<(), SearchError> {
        let pattern = format!("{}-*", self.alias);
        let r = self
            .client
            .indices()
            .delete(IndicesDeleteParts::Index(&[&pattern]))
            .send()
            .await
            .map_err(unavailable)?;
        check(r).await.map(|_| ())
    }

    /// The indices the alias points at now.
    async fn live_indices(&self) -> Result<Vec<String>, SearchError> {
        let r = self
            .client
            .indices()
            .get_alias(IndicesGetAliasParts::Name(&[&self.alias]))
            .send()
            .await
            .map_err(unavailable)?;
        if r.status_code().as_u16() == 404 {
            return Ok(Vec::new());
        }
        let body = check(r).await?;
        Ok(body
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default())
    }

    /// Every index named after the alias (`<alias>-v…`), live or not.
    async fn own_indices(&self) -> Result<Vec<String>, SearchError> {
        let pattern = format!("{}-v*", self.alias);
        let r = self
            .client
            .indices()
            .get(IndicesGetParts::Index(&[&pattern]))
            .send()
            .await
            .map_err(unavailable)?;
        let body = check(r).await?;
        Ok(body
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default())
    }

    async fn delete_indices(&self, names: &[String]) -> Result<(), SearchError> {
        if names.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let r = self
            .client
            .indices()
            .delete(IndicesDeleteParts::Index(&names))
            .send()
            .await
            .map_err(unavailable)?;
        check(r).await.map(|_| ())
    }

    /// One `_bulk` request into `index` (an alias or an index name).
    /// Requests of at most about [`MAX_BULK_BYTES`] each (a batch of analysed videos
    /// carries megabytes of vectors; an engine refuses a request over
    /// `http.max_content_length`), sent one after another; the outcomes in order.
    async fn bulk_into(&self, index: &str, ops: Vec<Op>) -> Result<Vec<Outcome>, SearchError> {
        let mut out = Vec::with_capacity(ops.len());
        let mut part = Vec::new();
        let mut bytes = 0;
        for op in ops {
            let size = approx_bytes(&op);
            if !part.is_empty() && bytes + size > MAX_BULK_BYTES {
                out.extend(self.one_bulk(index, std::mem::take(&mut part)).await?);
                bytes = 0;
            }
            bytes += size;
            part.push(op);
        }
        out.extend(self.one_bulk(index, part).await?);
        Ok(out)
    }

    async fn one_bulk(&self, index: &str, ops: Vec<Op>) -> Result<Vec<Outcome>, SearchError> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let mut req = self.client.bulk(BulkParts::Index(index)).body(
            Self::lines(&ops)
                .into_iter()
                .map(Into::into)
                .collect::<Vec<elasticsearch::http::request::JsonBody<Value>>>(),
        );
        if self.refresh {
            req = req.refresh(Refresh::WaitFor);
        }
        let body = check(req.send().await.map_err(unavailable)?).await?;
        let items = body["items"].as_array().cloned().unwrap_or_default();
        if items.len() != ops.len() {
            return Err(SearchError::Backend(format!(
                "bulk answered {} items for {} writes",
                items.len(),
                ops.len()
            )));
        }
        Ok(items.iter().map(outcome).collect())
    }

    /// A search for words: every clause in filter context, no score at all. BM25's
    /// statistics come from the whole index, so a scored order would let one tenant learn
    /// whether another tenant's materials hold a word; results are newest first instead.
    fn words_body(q: &Query, mut filter: Vec<Value>) -> Value {
        let words = json!({ "multi_match": { "query": q.text, "fields": ["title", "content", "tags"], "operator": "and" } });
        if !q.text.trim().is_empty() {
            filter.push(words.clone());
        }
        let mut body = json!({
            "from": q.offset, "size": q.limit.max(1), "track_total_hits": true,
            "_source": { "excludes": ["vectors"] },
            "query": { "bool": { "filter": filter } },
            "sort": [ { "created_at": { "order": "desc" } } ],
        });
        if !q.text.trim().is_empty() {
            // Filters are not highlighted by themselves: the words are named again.
            body["highlight"] = json!({ "pre_tags": ["<em>"], "post_tags": ["</em>"], "encoder": "html",
                "highlight_query": words,
                "fields": { "content": { "fragment_size": 160, "number_of_fragments": 1 } } });
        }
        body
    }

    fn lines(ops: &[Op]) -> Vec<Value> {
        let mut lines = Vec::with_capacity(ops.len() * 2);
        for op in ops {
            let meta =
                json!({ "_id": op.id(), "version": op.version(), "version_type": "external" });
            match op {
                Op::Index(d) => {
                    lines.push(json!({ "index": meta }));
                    let mut source = json!({
                        "owner": d.owner, "kind": d.kind, "title": d.title, "content": d.content,
                        "tags": d.tags, "created_at": d.created_at.timestamp_millis(),
                        "version": d.version,
                    });
                    if !d.vectors.is_empty() {
                        source["vectors"] = semantic::field(&d.vectors);
                    }
                    lines.push(source);
                }
                Op::Delete { .. } => lines.push(json!({ "delete": meta })),
            }
        }
        lines
    }
}

#[async_trait]
impl SearchIndex for ElasticIndex {
    async fn bulk(&self, ops: Vec<Op>) -> Result<Vec<Outcome>, SearchError> {
        self.ensured().await?;
        self.bulk_into(&self.alias, ops).await
    }

    async fn search(&self, q: &Query) -> Result<Hits, SearchError> {
        self.ensured().await?;
        // The owner filter is always applied, whatever the text says.
        let mut filter = vec![json!({ "term": { "owner": q.owner } })];
        if let Some(kind) = &q.kind {
            filter.push(json!({ "term": { "kind": kind } }));
        }
        let body = match &q.semantic {
            Some(vector) => semantic::body(q, vector, filter),
            None => Self::words_body(q, filter),
        };
        let r = self
            .client
            .search(SearchParts::Index(&[&self.alias]))
            .body(body)
            .send()
            .await
            .map_err(unavailable)?;
        let body = check(r).await?;
        let hits = body["hits"]["hits"].as_array().cloned().unwrap_or_default();
        Ok(Hits {
            total: body["hits"]["total"]["value"].as_u64().unwrap_or(0),
            hits: hits
                .iter()
                .map(|h| hit(h, q.semantic.as_ref().and_then(|_| semantic::score(h))))
                .collect(),
        })
    }
    async fn ping(&self) -> Result<(), SearchError> {
        let r = self.client.ping().send().await.map_err(unavailable)?;
        if r.status_code().is_success() {
            Ok(())
        } else {
            Err(SearchError::Unavailable(format!(
                "ping: {}",
                r.status_code()
            )))
        }
    }

    async fn rebuild(&self) -> Result<Box<dyn Rebuild>, SearchError> {
        self.ensured().await?;
        // An index of an earlier rebuild that never swapped (killed halfway) is garbage.
        let live = self.live_indices().await?;
        let orphans: Vec<String> = self
            .own_indices()
            .await?
            .into_iter()
            .filter(|i| !live.contains(i))
            .collect();
        self.delete_indices(&orphans).await?;
        let name = format!("{}-v{}", self.alias, chrono::Utc::now().timestamp_millis());
        let r = self
            .client
            .indices()
            .create(IndicesCreateParts::Index(&name))
            .body(mapping())
            .send()
            .await
            .map_err(unavailable)?;
        check(r).await?;
        Ok(Box::new(ElasticRebuild {
            index: ElasticIndex {
                client: self.client.clone(),
                alias: self.alias.clone(),
                refresh: self.refresh,
                ensured: tokio::sync::OnceCell::new_with(Some(())),
            },
            name,
        }))
    }
}
