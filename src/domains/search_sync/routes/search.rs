//! Search over the caller's materials: the owner filter is set here from the API key,
//! never taken from the request. By words (plain words only, no query syntax), newest
//! first; or by meaning (`semantic`: the text embedded by the model that embedded the
//! videos), best match first.

use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::Materials;
use crate::api::openapi::ErrorBody;
use crate::api::{ApiQuery, AuthUser};
use crate::error::ApiError;
use crate::search;

/// Search results beyond this offset are not served (the engines' default window).
const MAX_OFFSET: usize = 10_000;
const MAX_QUERY_CHARS: usize = 200;
const MAX_SEMANTIC_CHARS: usize = 500;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct SearchQuery {
    /// Words to find in title, content and tags (all of them); empty lists everything.
    /// Words only: field queries (`name:value`), wildcards (`*`) and ranges are 400.
    #[param(max_length = 200)]
    q: Option<String>,
    /// Search by meaning instead of words: materials ranked by how close their content
    /// (a video's summary, knowledge entry and transcript) is to this text, best first,
    /// each with its `score`. Not together with `q`.
    #[param(min_length = 1, max_length = 500)]
    semantic: Option<String>,
    /// With `semantic`: the least score (cosine, -1 to 1) listed; `search.semantic_min_score`
    /// by default.
    #[param(minimum = -1.0, maximum = 1.0)]
    min_score: Option<f32>,
    /// Only materials of this kind (a task kind: `copywriting`, `image`, …).
    #[param(pattern = "^[a-z0-9_]{1,32}$")]
    kind: Option<String>,
    /// `next_cursor` of the previous page.
    #[param(pattern = "^([0-9]{1,4}|10000)$")]
    cursor: Option<String>,
    /// Page size, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u64>,
}

/// One search result.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SearchHit {
    pub id: String,
    pub kind: String,
    pub title: String,
    pub tags: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub version: i64,
    /// A fragment of the content, HTML-escaped, with the matched words in `<em>…</em>`
    /// (empty in a search by meaning).
    pub highlight: String,
    /// A search by meaning: how close the material is to the query (cosine, up to 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SearchPage {
    /// How many materials match.
    pub total: u64,
    pub items: Vec<SearchHit>,
    pub next_cursor: Option<String>,
}

/// `GET /v1/materials/search?q=&kind=&cursor=&limit=`: the caller's materials that match
/// every word of `q`, newest first, with highlights; or, with `semantic=` instead of `q`,
/// those closest in meaning, best first. Changes become searchable when the sync has run
/// (within about a second).
#[utoipa::path(get, path = "/v1/materials/search", tag = "materials", security(("api_key" = [])),
    params(SearchQuery),
    responses(
        (status = 200, description = "Matches among the caller's materials", body = SearchPage),
        (status = 400, description = "Bad query, kind, cursor or limit (named in `field`)", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        (status = 503, description = "The search backend (or, for `semantic`, the embeddings provider) is unavailable; retry later", body = ErrorBody)))]
pub(crate) async fn find(
    State(state): State<Materials>,
    AuthUser(user): AuthUser,
    ApiQuery(q): ApiQuery<SearchQuery>,
) -> Result<axum::Json<SearchPage>, ApiError> {
    let limit = crate::api::page::limit(q.limit)? as usize;
    let text = q.q.unwrap_or_default();
    if text.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::bad_request(
            "q",
            format!("at most {MAX_QUERY_CHARS} characters"),
        ));
    }
    if let Some(why) = search::query_syntax(&text) {
        return Err(ApiError::malformed("query_syntax", why.into()).with_field(Some("q".into())));
    }
    // Any well-formed kind: one no material has simply matches nothing. (Materials
    // know the kinds of the tasks that made them, not the task domain's list.)
    let kind_ok = |k: &str| {
        (1..=32).contains(&k.len())
            && k.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    if let Some(k) = q.kind.as_deref().filter(|k| !kind_ok(k)) {
        return Err(ApiError::bad_request(
            "kind",
            format!("`{k}` is not a kind"),
        ));
    }
    let kind = q.kind;
    let offset = match q.cursor.as_deref() {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|o| *o <= MAX_OFFSET)
            .ok_or_else(|| ApiError::bad_request("cursor", "is not a cursor this API issued"))?,
    };
    let semantic = match q.semantic {
        None => None,
        Some(_) if !text.trim().is_empty() => {
            return Err(ApiError::bad_request(
                "semantic",
                "search by words (q) or by meaning (semantic), not both",
            ));
        }
        Some(s) => Some(embed(&state, &s).await?),
    };
    let min_score = match q.min_score {
        Some(m) if !(-1.0..=1.0).contains(&m) => {
            return Err(ApiError::bad_request("min_score", "must be from -1 to 1"));
        }
        Some(m) => m,
        None => state.search.settings.semantic_min_score,
    };
    let query = search::Query {
        owner: user.id.clone(),
        text,
        kind,
        semantic,
        min_score,
        offset,
        limit,
    };
    let hits = state.search.index.search(&query).await.map_err(|e| {
        tracing::warn!(error = %e, "search failed");
        ApiError::unavailable("search is unavailable; retry later".into())
    })?;
    let next = offset + hits.hits.len();
    let next_cursor =
        (hits.hits.len() == limit && (next as u64) < hits.total && next <= MAX_OFFSET)
            .then(|| next.to_string());
    Ok(axum::Json(SearchPage {
        total: hits.total,
        items: hits
            .hits
            .into_iter()
            .map(|h| SearchHit {
                id: h.id,
                kind: h.kind,
                title: h.title,
                tags: h.tags,
                created_at: h.created_at,
                version: h.version,
                highlight: h.highlight,
                score: h.score,
            })
            .collect(),
        next_cursor,
    }))
}

/// The vector of a search by meaning's text.
async fn embed(state: &Materials, text: &str) -> Result<Vec<f32>, ApiError> {
    if text.trim().is_empty() || text.chars().count() > MAX_SEMANTIC_CHARS {
        return Err(ApiError::bad_request(
            "semantic",
            format!("1 to {MAX_SEMANTIC_CHARS} characters, not only blanks"),
        ));
    }
    let embeddings = state.embeddings.as_ref().ok_or_else(|| {
        ApiError::unavailable("search by meaning is not available in this process".into())
    })?;
    embeddings.embed_query(text).await.map_err(|e| {
        tracing::warn!(error = %e, "embedding a search query failed");
        ApiError::unavailable(format!("{e}; retry later"))
    })
}
