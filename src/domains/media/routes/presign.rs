//! `POST /v1/uploads/presign`: a browser uploads straight to the bucket (S3 stores
//! only). The upload is recorded PENDING with its declared type and size, which are
//! reserved from the quota now; `POST /v1/uploads/{id}/complete` checks the bytes.
//!
//! The URL is signed over the declared `Content-Type`, `Content-Length` and (if given)
//! SHA-256, so the bucket refuses a PUT of another type or size. It writes to an
//! `incoming` key that is never served: completion copies the object to a key only the
//! platform writes and checks the copy, so a PUT after completion changes nothing served.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::Media;
use super::upload::{over_quota, too_large};
use crate::api::openapi::ErrorBody;
use crate::api::{ApiJson, AuthUser};
use crate::domains::media::view::UploadView;
use crate::error::ApiError;
use crate::storage::records::{self, usage};
use crate::storage::sniff::{self, Purpose};
use crate::storage::{Key, presign};

/// The `purpose` part of the keys presigned uploads are written to.
const INCOMING: &str = "incoming";

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PresignRequest {
    /// `video`, `image` or `audio`.
    purpose: String,
    /// The file's content type, one the purpose accepts (checked against the bytes at
    /// completion).
    content_type: String,
    /// The file's exact size in bytes: the PUT's `Content-Length` must be this (signed
    /// into the URL), and completion checks it.
    size: u64,
    /// Hex SHA-256 of the file, optional: when given, the PUT must send it (the
    /// `x-amz-checksum-sha256` of `headers`; stores that check it refuse other bytes) and
    /// completion refuses other bytes (`checksum_mismatch`).
    #[serde(default)]
    sha256: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Presigned {
    pub upload: UploadView,
    /// `PUT` the bytes here, before `expires_at`, with `headers`, then call `complete`.
    pub upload_url: String,
    pub method: &'static str,
    /// Headers the `PUT` must carry, exactly (they are signed into the URL):
    /// `Content-Type`, and `x-amz-checksum-sha256` when `sha256` was declared. Its
    /// `Content-Length` must be the declared `size` (clients set it from the body).
    pub headers: BTreeMap<String, String>,
    pub expires_at: DateTime<Utc>,
}

/// `POST /v1/uploads/presign`.
#[utoipa::path(post, path = "/v1/uploads/presign", operation_id = "presign_upload", tag = "uploads", security(("api_key" = [])),
    request_body = PresignRequest,
    responses(
        (status = 201, description = "A PENDING upload and the URL to PUT its bytes to", body = Presigned),
        crate::api::openapi::Unauthorized,
        (status = 409, description = "`presign_unavailable`: the store is local; use POST /v1/uploads", body = ErrorBody),
        (status = 413, description = "`file_too_large` or `storage_quota`", body = ErrorBody),
        (status = 422, description = "Bad purpose, content type or size (named in `field`)", body = ErrorBody)))]
pub(crate) async fn create(
    State(state): State<Media>,
    AuthUser(user): AuthUser,
    ApiJson(req): ApiJson<PresignRequest>,
) -> Result<(StatusCode, Json<Presigned>), ApiError> {
    let storage = &state.core.storage;
    if !storage.presigns() {
        return Err(ApiError::refused(
            "presign_unavailable",
            "this deployment stores files locally: upload with POST /v1/uploads".into(),
        ));
    }
    let purpose = Purpose::parse(&req.purpose)
        .ok_or_else(|| ApiError::invalid("purpose", "must be one of: video, image, audio"))?;
    let ext = sniff::extension_of(purpose, &req.content_type).ok_or_else(|| {
        ApiError::invalid(
            "content_type",
            format!(
                "{} uploads take {}",
                purpose.as_str(),
                purpose.accepts().join(", ")
            ),
        )
    })?;
    if req.size == 0 {
        return Err(ApiError::invalid("size", "must be greater than 0"));
    }
    let sha256 = req.sha256.as_deref().map(str::to_ascii_lowercase);
    if sha256
        .as_deref()
        .is_some_and(|s| presign::checksum_header(s).is_none())
    {
        return Err(ApiError::invalid("sha256", "must be 64 hex digits"));
    }
    let (limit, quota) = super::upload::caps(&state.core, &user.id, purpose).await;
    if req.size > limit {
        return Err(too_large(purpose, limit));
    }
    let db = &state.core.db;
    if !usage::reserve(db, &user.id, req.size, quota).await? {
        return Err(over_quota(quota));
    }
    let id = uuid::Uuid::now_v7().to_string();
    // Where the client writes; never served (completion copies it, see the module doc).
    let key = Key::new(&user.id, INCOMING, &id, ext).map_err(|e| ApiError::internal(e.into()))?;
    let declared = records::Declared {
        content_type: Some(&req.content_type),
        sha256: sha256.as_deref(),
    };
    let row = records::create_pending_with_id(
        db,
        &id,
        &user.id,
        purpose.as_str(),
        Some(&key),
        req.size,
        declared,
    )
    .await?;
    let terms = presign::UploadTerms {
        content_type: &req.content_type,
        content_length: req.size,
        sha256: sha256.as_deref(),
    };
    let put = storage
        .upload_url(&key, &terms)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("an S3 store gave no upload URL")))?;
    let upload = UploadView::of(storage, row).await?;
    Ok((
        StatusCode::CREATED,
        Json(Presigned {
            upload,
            upload_url: put.url,
            method: "PUT",
            headers: put
                .headers
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            expires_at: put.expires_at,
        }),
    ))
}
