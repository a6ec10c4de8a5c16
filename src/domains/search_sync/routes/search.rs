//! Search over the caller's materials: the owner filter is set here from the API key,
//! never taken from the request; plain words only (no query syntax), newest first.

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

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct SearchQuery {
    /// Words to find in title, content and tags (all of them); empty lists everything.
    /// Words only: field queries (`name:value`), wildcards (`*`) and ranges are 400.
    #[param(max_length = 200)]
    q: Option<String>,
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
    /// A fragment of the content, HTML-escaped, with the matched words in `<em>…</em>`.
    pub highlight: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SearchPage {
    /// How many materials match.
    pub total: u64,
    pub items: Vec<SearchHit>,
    pub next_cursor: Option<String>,
}

/// `GET /v1/materials/search?q=&kind=&cursor=&limit=`: the caller's materials that match
/// every word of `q`, newest first, with highlights. Changes become searchable when the sync has run (within
/// about a second).
#[utoipa::path(get, path = "/v1/materials/search", tag = "materials", security(("api_key" = [])),
    params(SearchQuery),
    responses(
        (status = 200, description = "Matches among the caller's materials", body = SearchPage),
        (status = 400, description = "Bad query, kind, cursor or limit (named in `field`)", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 503, description = "The search backend is unavailable; retry later", body = ErrorBody)))]
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
        return Err(ApiError::BadRequest {
            code: "query_syntax",
            message: why.into(),
            field: Some("q".into()),
        });
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
    let query = search::Query {
        owner: user.id.clone(),
        text,
        kind,
        offset,
        limit,
    };
    let hits = state.search.index.search(&query).await.map_err(|e| {
        tracing::warn!(error = %e, "search failed");
        ApiError::Unavailable("search is unavailable; retry later".into())
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
            })
            .collect(),
        next_cursor,
    }))
}
