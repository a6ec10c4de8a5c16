//! An owner's materials: list, read, edit title and tags, delete.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::Materials;
use crate::api::openapi::ErrorBody;
use crate::api::{ApiJson, AuthUser, IdPage, Page, PageQuery};
use crate::domains::search_sync::store::{
    self, MAX_TAG_CHARS, MAX_TAGS, MAX_TITLE_CHARS, Patch, StoreError,
};
use crate::domains::search_sync::view::MaterialView;
use crate::error::ApiError;
use crate::storage::view::FileView;

fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::Db(e) => e.into(),
        StoreError::Outbox(e) => ApiError::internal(e.into()),
    }
}

/// `GET /v1/materials?cursor=&limit=`: the caller's materials, newest first.
#[utoipa::path(get, path = "/v1/materials", operation_id = "list_materials", tag = "materials", security(("api_key" = [])),
    params(PageQuery),
    responses(
        (status = 200, description = "The caller's materials, newest first", body = Page<MaterialView>),
        (status = 400, description = "Bad limit or cursor (named in `field`)", body = ErrorBody),
        crate::api::openapi::Unauthorized))]
pub(crate) async fn list(
    State(state): State<Materials>,
    AuthUser(user): AuthUser,
    page: IdPage,
) -> Result<axum::Json<Page<MaterialView>>, ApiError> {
    let limit = page.limit;
    let rows = store::list(&state.core.db, &user.id, page.cursor(), limit).await?;
    let items: Vec<MaterialView> = rows.into_iter().map(MaterialView::from).collect();
    Ok(axum::Json(Page::new(items, limit, |m| m.id.clone())))
}

/// `GET /v1/materials/{id}`.
#[utoipa::path(get, path = "/v1/materials/{id}", operation_id = "show_material", tag = "materials", security(("api_key" = [])),
    params(("id" = String, Path, description = "Material id")),
    responses(
        (status = 200, description = "The material", body = MaterialView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such material of the caller's", body = ErrorBody)))]
pub(crate) async fn read(
    State(state): State<Materials>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<axum::Json<MaterialView>, ApiError> {
    let material = store::get_owned(&state.core.db, &user.id, &id)
        .await?
        .ok_or(ApiError::not_found("material"))?;
    let files =
        crate::storage::records::of_tasks(&state.core.db, std::slice::from_ref(&material.task_id))
            .await?;
    let mut view = MaterialView::from(material);
    view.files = FileView::all(&state.core.storage, files).await?;
    Ok(axum::Json(view))
}

/// What an owner may change; at least one field.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(min_properties = 1)]
pub struct PatchRequest {
    /// 1 to 200 characters, not blank.
    #[schema(min_length = 1, max_length = 200, pattern = r"\S", nullable = false)]
    pub title: Option<String>,
    /// At most 20 tags of 1 to 50 characters each; duplicates are dropped.
    #[schema(max_items = 20, value_type = Option<Vec<Tag>>, nullable = false)]
    pub tags: Option<Vec<String>>,
}

/// One tag: 1 to 50 characters, not blank (the document states it so that a generated
/// client never sends one the server refuses). Documents the rule; tags are read as
/// strings.
pub struct Tag;

impl utoipa::PartialSchema for Tag {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(MAX_TAG_CHARS))
            .pattern(Some(r"\S"))
            .description(Some("1 to 50 characters, not blank"))
            .into()
    }
}

impl utoipa::ToSchema for Tag {}

fn validate(req: PatchRequest) -> Result<Patch, ApiError> {
    if req.title.is_none() && req.tags.is_none() {
        return Err(ApiError::invalid("title", "give `title`, `tags` or both"));
    }
    let title = match req.title {
        None => None,
        Some(t) => {
            // Counted as sent (the document's bound), then kept trimmed.
            let long = t.chars().count() > MAX_TITLE_CHARS;
            let t = t.trim().to_owned();
            if t.is_empty() || long {
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
            if tags.len() > MAX_TAGS {
                return Err(ApiError::invalid(
                    "tags",
                    format!("at most {MAX_TAGS} tags"),
                ));
            }
            let mut clean: Vec<String> = Vec::new();
            for t in tags {
                let long = t.chars().count() > MAX_TAG_CHARS;
                let t = t.trim().to_owned();
                if t.is_empty() || long {
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
#[utoipa::path(patch, path = "/v1/materials/{id}", operation_id = "edit_material", tag = "materials", security(("api_key" = [])),
    params(("id" = String, Path, description = "Material id")),
    request_body = PatchRequest,
    responses(
        (status = 200, description = "The material after the change (a new version)", body = MaterialView),
        (status = 400, description = "Not JSON, or unknown fields", body = ErrorBody),
        crate::api::openapi::Unauthorized,
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
        .take(&crate::domains::search_sync::limits::WRITES, &user.id)
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
        Err(_) => return Err(ApiError::not_found("material")),
    };
    store::update(&state.core.db, &user.id, &id, patch)
        .await
        .map_err(store_error)?
        .map(|m| {
            state.core.relay.notify();
            axum::Json(m.into())
        })
        .ok_or(ApiError::not_found("material"))
}

/// `DELETE /v1/materials/{id}`: gone from lists at once, from search when the sync runs.
#[utoipa::path(delete, path = "/v1/materials/{id}", operation_id = "delete_material", tag = "materials", security(("api_key" = [])),
    params(("id" = String, Path, description = "Material id")),
    responses(
        (status = 204, description = "Deleted"),
        crate::api::openapi::Unauthorized,
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
        .take(&crate::domains::search_sync::limits::WRITES, &user.id)
        .await?;
    let grace = chrono::Duration::seconds(state.core.storage.settings.delete_grace_secs as i64);
    match store::delete(&state.core.db, &user.id, &id, grace)
        .await
        .map_err(store_error)?
    {
        Some(_) => {
            state.core.relay.notify();
            Ok(StatusCode::NO_CONTENT)
        }
        None => Err(ApiError::not_found("material")),
    }
}
