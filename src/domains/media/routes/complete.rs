//! `POST /v1/uploads/{id}/complete`: a presigned upload's bytes are in the bucket. The
//! object must exist with the declared size and its first bytes must be the declared
//! type; the checksum is computed by reading it once. Anything else REJECTS the upload
//! and removes the object. Completing a READY upload again answers it as it is.

use axum::Json;
use axum::extract::{Path, State};
use futures::StreamExt as _;
use sha2::{Digest as _, Sha256};

use super::Media;
use crate::api::AuthUser;
use crate::api::openapi::ErrorBody;
use crate::domains::media::view::UploadView;
use crate::error::ApiError;
use crate::storage::records::{self, Dimensions, PENDING};
use crate::storage::sniff::{self, Purpose, SNIFF_BYTES};
use crate::storage::{Key, StorageError, Written};

/// `POST /v1/uploads/{id}/complete`.
#[utoipa::path(post, path = "/v1/uploads/{id}/complete", tag = "uploads", security(("api_key" = [])),
    params(("id" = String, Path, description = "Upload id")),
    responses(
        (status = 200, description = "READY (or as it already was)", body = UploadView),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 404, description = "No such upload of the caller's", body = ErrorBody),
        (status = 409, description = "`not_uploaded`: no object in the bucket yet", body = ErrorBody),
        (status = 422, description = "`size_mismatch` or `unsupported_media_type`: the upload is REJECTED and its object removed", body = ErrorBody)))]
pub(crate) async fn complete(
    State(state): State<Media>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<UploadView>, ApiError> {
    let (db, storage) = (&state.core.db, &state.core.storage);
    let row = records::find(db, &user.id, &id)
        .await?
        .ok_or(ApiError::NotFound("upload"))?;
    let (Some(key), Some(purpose)) = (row.store_key.clone(), Purpose::parse(&row.purpose)) else {
        return Err(ApiError::NotFound("upload"));
    };
    if row.status != PENDING {
        return Ok(Json(UploadView::of(storage, row).await?));
    }
    let key = Key::parse(&key).map_err(|e| ApiError::Internal(e.into()))?;
    let head = match storage.head(&key).await {
        Ok(h) => h,
        Err(StorageError::NotFound) => {
            return Err(ApiError::Refused {
                code: "not_uploaded",
                message:
                    "no bytes have arrived for this upload yet: PUT them to its upload_url first"
                        .into(),
            });
        }
        Err(e) => return Err(e.into()),
    };
    if head.size as i64 != row.reserved {
        let why = format!(
            "{} bytes arrived, {} were declared",
            head.size, row.reserved
        );
        return reject(&state, &row, &key, "size_mismatch", why).await;
    }
    // One pass over the bytes: the kind from the first ones, the checksum from all.
    let mut read = storage.read(&key, None).await?;
    let (mut first, mut hasher) = (Vec::with_capacity(SNIFF_BYTES), Sha256::new());
    while let Some(chunk) = read.bytes.next().await {
        let chunk = chunk?;
        if first.len() < SNIFF_BYTES {
            let take = (SNIFF_BYTES - first.len()).min(chunk.len());
            first.extend_from_slice(&chunk[..take]);
        }
        hasher.update(&chunk);
    }
    let kind = match sniff::check(purpose, &first) {
        Ok(k) if Some(k.content_type) == row.content_type.as_deref() => k,
        Ok(k) => {
            let why = format!(
                "the bytes are {}, {} was declared",
                k.content_type,
                row.content_type.as_deref().unwrap_or("nothing")
            );
            return reject(&state, &row, &key, "unsupported_media_type", why).await;
        }
        Err(why) => return reject(&state, &row, &key, "unsupported_media_type", why).await,
    };
    let written = Written {
        key,
        size: head.size,
        sha256: hex::encode(hasher.finalize()),
        kind,
    };
    let row = records::mark_ready(db, &row, &written, Dimensions::default())
        .await?
        .ok_or(ApiError::NotFound("upload"))?;
    metrics::counter!("conveyor_storage_uploads_total", "outcome" => "ready").increment(1);
    Ok(Json(UploadView::of(storage, row).await?))
}

/// REJECTS the upload: its object removed, its reservation given back, 422 `code`.
async fn reject(
    state: &Media,
    row: &records::Object,
    key: &Key,
    code: &'static str,
    why: String,
) -> Result<Json<UploadView>, ApiError> {
    state.core.storage.delete(key.as_str()).await?;
    records::mark_rejected(&state.core.db, row, &why).await?;
    metrics::counter!("conveyor_storage_uploads_total", "outcome" => "rejected").increment(1);
    Err(ApiError::Unprocessable {
        code,
        message: format!("upload {} REJECTED: {why}", row.id),
        field: None,
    })
}
