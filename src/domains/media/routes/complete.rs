//! `POST /v1/uploads/{id}/complete`: a presigned upload's bytes are in the bucket. They
//! are copied (server-side) from the `incoming` key the client wrote to a key only the
//! platform writes, and the copy is what is checked and served: it must have the
//! declared size, its first bytes must be the declared type and, when a SHA-256 was
//! declared, its checksum that one. A PUT to the presigned URL after this (it works
//! until it expires) lands on the `incoming` key again, which nothing serves and the
//! collector removes. Anything else REJECTS the upload and removes its objects.
//! Completing a READY upload again answers it as it is.

use axum::Json;
use axum::extract::{Path, State};
use futures::StreamExt as _;
use sha2::{Digest as _, Sha256};

use super::Media;
use crate::api::AuthUser;
use crate::api::openapi::ErrorBody;
use crate::domains::media::limits;
use crate::domains::media::view::UploadView;
use crate::error::ApiError;
use crate::storage::records::{self, Dimensions, ObjectStatus};
use crate::storage::sniff::{self, Purpose, SNIFF_BYTES};
use crate::storage::{Key, StorageError, Written};

/// `POST /v1/uploads/{id}/complete`.
#[utoipa::path(post, path = "/v1/uploads/{id}/complete", tag = "uploads", security(("api_key" = [])),
    params(("id" = String, Path, description = "Upload id")),
    responses(
        (status = 200, description = "READY (or as it already was)", body = UploadView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such upload of the caller's", body = ErrorBody),
        (status = 409, description = "`not_uploaded`: no object in the bucket yet", body = ErrorBody),
        (status = 422, description = "`size_mismatch`, `unsupported_media_type` or `checksum_mismatch`: the upload is REJECTED and its object removed", body = ErrorBody),
        (status = 429, description = "`too_many_uploads`: the tenant has `limits.uploads_concurrent` uploads (and completions) in progress on this server; `Retry-After` says when to try again", body = ErrorBody)))]
pub(crate) async fn complete(
    State(state): State<Media>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<UploadView>, ApiError> {
    let (db, storage) = (&state.core.db, &state.core.storage);
    let row = records::find(db, &user.id, &id)
        .await?
        .ok_or(ApiError::not_found("upload"))?;
    let (Some(key), Some(purpose)) = (row.store_key.clone(), Purpose::parse(&row.purpose)) else {
        return Err(ApiError::not_found("upload"));
    };
    if row.status != ObjectStatus::Pending {
        return Ok(Json(UploadView::of(storage, row).await?));
    }
    // A completion copies and reads the whole object: it holds one of the tenant's
    // upload places until its answer, so parallel calls cannot multiply that work.
    let _place = limits::hold(&state.core.limits, &user.id).await?;
    let incoming = Key::parse(&key).map_err(|e| ApiError::internal(e.into()))?;
    // A key of this attempt's own: two completions at once never write the same object,
    // so the one that is marked READY serves what it checked.
    let attempt = format!("{}-{:08x}", row.id, rand::random::<u32>());
    let copy = Key::new(&user.id, purpose.as_str(), &attempt, incoming.extension())
        .map_err(|e| ApiError::internal(e.into()))?;
    match storage.copy(&incoming, &copy).await {
        Ok(()) => {}
        Err(StorageError::NotFound) => {
            return Err(ApiError::refused(
                "not_uploaded",
                "no bytes have arrived for this upload yet: PUT them to its upload_url first"
                    .into(),
            ));
        }
        Err(e) => return Err(e.into()),
    }
    let keys = [&incoming, &copy];
    let head = storage.head(&copy).await?;
    if head.size as i64 != row.reserved {
        let why = format!(
            "{} bytes arrived, {} were declared",
            head.size, row.reserved
        );
        return reject(&state, &row, &keys, "size_mismatch", why).await;
    }
    // One pass over the copy: the kind from the first bytes, the checksum from all.
    let mut read = storage.read(&copy, None).await?;
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
            return reject(&state, &row, &keys, "unsupported_media_type", why).await;
        }
        Err(why) => return reject(&state, &row, &keys, "unsupported_media_type", why).await,
    };
    let sha256 = hex::encode(hasher.finalize());
    // A PENDING row's sha256 is the one its client declared, if it declared one.
    if let Some(declared) = row.sha256.as_deref().filter(|d| *d != sha256) {
        let why = format!("the bytes' SHA-256 is {sha256}, {declared} was declared");
        return reject(&state, &row, &keys, "checksum_mismatch", why).await;
    }
    let written = Written {
        key: copy.clone(),
        size: head.size,
        sha256,
        kind,
    };
    let Some(ready) = records::mark_ready(db, &row, &written, Dimensions::default()).await? else {
        // Another completion settled it first (or the collector abandoned it): this
        // attempt's copy is not the one served.
        storage.delete(copy.as_str()).await?;
        let now = records::find(db, &user.id, &id)
            .await?
            .ok_or(ApiError::not_found("upload"))?;
        return Ok(Json(UploadView::of(storage, now).await?));
    };
    // Settled: what the client wrote is no longer needed (a retry after a failure
    // before this point copies it again). A failed delete does not undo the READY
    // answer: no row names the incoming key, so the collector removes it later.
    if let Err(e) = storage.delete(incoming.as_str()).await {
        tracing::warn!(error = %e, key = incoming.as_str(), "an upload's incoming object not removed; left to the collector");
    }
    metrics::counter!("conveyor_storage_uploads_total", "outcome" => "ready").increment(1);
    Ok(Json(UploadView::of(storage, ready).await?))
}

/// REJECTS the upload: its objects removed, its reservation given back, 422 `code`.
async fn reject(
    state: &Media,
    row: &records::Object,
    keys: &[&Key],
    code: &'static str,
    why: String,
) -> Result<Json<UploadView>, ApiError> {
    for key in keys {
        state.core.storage.delete(key.as_str()).await?;
    }
    records::mark_rejected(&state.core.db, row, &why).await?;
    metrics::counter!("conveyor_storage_uploads_total", "outcome" => "rejected").increment(1);
    Err(ApiError::unprocessable(
        code,
        format!("upload {} REJECTED: {why}", row.id),
    ))
}
