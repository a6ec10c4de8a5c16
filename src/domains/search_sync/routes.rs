//! HTTP: an owner's materials (list, read, edit title and tags, delete) and search over
//! them. Every read and write is scoped to the caller; the search's owner filter is set
//! here from the API key, never taken from the request.

use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRef, Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::backend::Search;
use super::store::{self, MAX_TAG_CHARS, MAX_TAGS, MAX_TITLE_CHARS, Material, Patch, StoreError};
use crate::api::openapi::ErrorBody;
use crate::api::{ApiJson, ApiQuery, AuthUser, Core, Page};
use crate::error::ApiError;
use crate::search;

/// Search results beyond this offset are not served (the engines' default window).
const MAX_OFFSET: usize = 10_000;
const MAX_QUERY_CHARS: usize = 200;

#[derive(Clone, FromRef)]
pub struct Materials {
    pub core: Core,
    pub search: Arc<Search>,
}

pub fn routes(state: Materials) -> Router {
    Router::new()
        .route("/v1/materials", get(list))
        .route("/v1/materials/search", get(find))
        .route("/v1/materials/{id}", get(read).patch(edit).delete(remove))
        .with_state(state)
}

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list, find, read, edit, remove),
    tags((name = "materials", description = "What AI tasks produced: list, edit, delete, search"))
)]
pub struct Doc;

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
        }
    }
}

fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::Db(e) => e.into(),
        StoreError::Outbox(e) => ApiError::Internal(e.into()),
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// `next_cursor` of the previous page.
    #[param(pattern = "^[0-9A-Za-z-]{1,64}$")]
    cursor: Option<String>,
    /// Page size, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u64>,
}

/// `GET /v1/materials?cursor=&limit=`: the caller's materials, newest first.
#[utoipa::path(get, path = "/v1/materials", tag = "materials", security(("api_key" = [])),
    params(ListQuery),
    responses(
        (status = 200, description = "The caller's materials, newest first", body = Page<MaterialView>),
        (status = 400, description = "Bad limit or cursor (named in `field`)", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody)))]
pub(crate) async fn list(
    State(state): State<Materials>,
    AuthUser(user): AuthUser,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<axum::Json<Page<MaterialView>>, ApiError> {
    let limit = crate::api::page::limit(q.limit)?;
    let cursor = crate::api::page::id_cursor(q.cursor.as_deref())?;
    let rows = store::list(&state.core.db, &user.id, cursor, limit).await?;
    let items: Vec<MaterialView> = rows.into_iter().map(MaterialView::from).collect();
    Ok(axum::Json(Page::new(items, limit, |m| m.id.clone())))
}

/// `GET /v1/materials/{id}`.
#[utoipa::path(get, path = "/v1/materials/{id}", tag = "materials", security(("api_key" = [])),
    params(("id" = String, Path, description = "Material id")),
    responses(
        (status = 200, description = "The material", body = MaterialView),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 404, description = "No such material of the caller's", body = ErrorBody)))]
pub(crate) async fn read(
    State(state): State<Materials>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<axum::Json<MaterialView>, ApiError> {
    store::get_owned(&state.core.db, &user.id, &id)
        .await?
        .map(|m| axum::Json(m.into()))
        .ok_or(ApiError::NotFound("material"))
}

/// What an owner may change; at least one field.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(min_properties = 1)]
pub struct PatchRequest {
    /// 1 to 200 characters, not blank.
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub title: Option<String>,
    /// At most 20 tags of 1 to 50 characters each; duplicates are dropped.
    #[schema(max_items = 20)]
    pub tags: Option<Vec<String>>,
}

fn validate(req: PatchRequest) -> Result<Patch, ApiError> {
    if req.title.is_none() && req.tags.is_none() {
        return Err(ApiError::invalid("title", "give `title`, `tags` or both"));
    }
    let title = match req.title {
        None => None,
        Some(t) => {
            let t = t.trim().to_owned();
            if t.is_empty() || t.chars().count() > MAX_TITLE_CHARS {
                return Err(ApiError::invalid(
                    "title",
                    format!("must be 1 to {MAX_TITLE_CHARS} characters, not blank"),
                ));
            }
            Some(t)
        }
    };
    let tags = match req.tags {
        None => None,
        Some(tags) => {
            let mut clean: Vec<String> = Vec::new();
            for t in tags {
                let t = t.trim().to_owned();
                if t.is_empty() || t.chars().count() > MAX_TAG_CHARS {
                    return Err(ApiError::invalid(
                        "tags",
                        format!("each tag must be 1 to {MAX_TAG_CHARS} characters, not blank"),
                    ));
                }
                if !clean.contains(&t) {
                    clean.push(t);
                }
            }
            if clean.len() > MAX_TAGS {
                return Err(ApiError::invalid(
                    "tags",
                    format!("at most {MAX_TAGS} tags"),
                ));
            }
            Some(clean)
        }
    };
    Ok(Patch { title, tags })
}

/// `PATCH /v1/materials/{id}`: change the title and/or tags; the search index follows.
#[utoipa::path(patch, path = "/v1/materials/{id}", tag = "materials", security(("api_key" = [])),
    params(("id" = String, Path, description = "Material id")),
    request_body = PatchRequest,
    responses(
        (status = 200, description = "The material after the change (a new version)", body = MaterialView),
        (status = 400, description = "Not JSON, or unknown fields", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 404, description = "No such material of the caller's", body = ErrorBody),
        (status = 422, description = "A field out of bounds (named in `field`)", body = ErrorBody),
        (status = 429, description = "`rate_limited`: material edits and deletes per minute of this account (`Retry-After`)", body = ErrorBody)))]
pub(crate) async fn edit(
    State(state): State<Materials>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<PatchRequest>,
) -> Result<axum::Json<MaterialView>, ApiError> {
    state
        .core
        .limits
        .take(&super::limits::WRITES, &user.id)
        .await?;
    let patch = match validate(req) {
        Ok(p) => p,
        // Another user's material is 404 whatever the body says (looked up only on this
        // path: a valid edit is one conditional UPDATE).
        Err(e)
            if store::get_owned(&state.core.db, &user.id, &id)
                .await?
                .is_some() =>
        {
            return Err(e);
        }
        Err(_) => return Err(ApiError::NotFound("material")),
    };
    store::update(&state.core.db, &user.id, &id, patch)
        .await
        .map_err(store_error)?
        .map(|m| {
            state.core.relay.notify();
            axum::Json(m.into())
        })
        .ok_or(ApiError::NotFound("material"))
}

/// `DELETE /v1/materials/{id}`: gone from lists at once, from search when the sync runs.
#[utoipa::path(delete, path = "/v1/materials/{id}", tag = "materials", security(("api_key" = [])),
    params(("id" = String, Path, description = "Material id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 404, description = "No such material of the caller's (or already deleted)", body = ErrorBody),
        (status = 429, description = "`rate_limited`: material edits and deletes per minute of this account (`Retry-After`)", body = ErrorBody)))]
pub(crate) async fn remove(
    State(state): State<Materials>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state
        .core
        .limits
        .take(&super::limits::WRITES, &user.id)
        .await?;
    match store::delete(&state.core.db, &user.id, &id)
        .await
        .map_err(store_error)?
    {
        Some(_) => {
            state.core.relay.notify();
            Ok(StatusCode::NO_CONTENT)
        }
        None => Err(ApiError::NotFound("material")),
    }
}

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
