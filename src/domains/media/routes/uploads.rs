//! `GET /v1/uploads`, `GET /v1/uploads/{id}` and `DELETE /v1/uploads/{id}`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::Media;
use crate::api::openapi::ErrorBody;
use crate::api::{AuthUser, IdPage, Page, PageQuery};
use crate::domains::media::view::UploadView;
use crate::error::ApiError;
use crate::storage::records::{self, GENERATED};

/// `GET /v1/uploads?cursor=&limit=`: the caller's uploads, newest first.
#[utoipa::path(get, path = "/v1/uploads", operation_id = "list_uploads", tag = "uploads", security(("api_key" = [])),
    params(PageQuery),
    responses(
        (status = 200, description = "The caller's uploads, newest first", body = Page<UploadView>),
        (status = 400, description = "Bad limit or cursor (named in `field`)", body = ErrorBody),
        crate::api::openapi::Unauthorized))]
pub(crate) async fn list(
    State(state): State<Media>,
    AuthUser(user): AuthUser,
    page: IdPage,
) -> Result<Json<Page<UploadView>>, ApiError> {
    let limit = page.limit;
    let rows = records::list_uploads(&state.core.db, &user.id, page.cursor(), limit).await?;
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        items.push(UploadView::of(&state.core.storage, row).await?);
    }
    Ok(Json(Page::new(items, limit, |u| u.id.clone())))
}

/// `GET /v1/uploads/{id}`: status, size, type, checksum and, once READY, a signed URL.
#[utoipa::path(get, path = "/v1/uploads/{id}", operation_id = "show_upload", tag = "uploads", security(("api_key" = [])),
    params(("id" = String, Path, description = "Upload id")),
    responses(
        (status = 200, description = "The upload", body = UploadView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such upload of the caller's", body = ErrorBody)))]
pub(crate) async fn read(
    State(state): State<Media>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<UploadView>, ApiError> {
    let row = records::find(&state.core.db, &user.id, &id)
        .await?
        .filter(|o| o.purpose != GENERATED)
        .ok_or(ApiError::not_found("upload"))?;
    Ok(Json(UploadView::of(&state.core.storage, row).await?))
}

/// `DELETE /v1/uploads/{id}`: gone at once for the API (its URLs stop working); the
/// bytes are removed after `storage.delete_grace_secs`, and the quota freed then.
#[utoipa::path(delete, path = "/v1/uploads/{id}", operation_id = "delete_upload", tag = "uploads", security(("api_key" = [])),
    params(("id" = String, Path, description = "Upload id")),
    responses(
        (status = 204, description = "Deleted"),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such upload of the caller's", body = ErrorBody)))]
pub(crate) async fn remove(
    State(state): State<Media>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let grace = chrono::Duration::seconds(state.core.storage.settings.delete_grace_secs as i64);
    if !records::delete_upload(&state.core.db, &user.id, &id, grace).await? {
        return Err(ApiError::not_found("upload"));
    }
    Ok(StatusCode::NO_CONTENT)
}
