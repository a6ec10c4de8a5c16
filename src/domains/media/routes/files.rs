//! `GET /v1/files/{key}?exp=&sig=`: the local store's signed downloads. The signature
//! names the key and the expiry, so a URL works for one file until `exp`; a deleted
//! file's URLs stop at once. Single byte ranges answer 206 (a browser's video seeks with
//! them); `ETag`, `Last-Modified`, `If-None-Match`, `Cache-Control` (private, no longer
//! than the URL lives) and `Content-Disposition` (inline, the key's file name) are set.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::Deserialize;

use super::Media;
use crate::api::ApiQuery;
use crate::api::openapi::ErrorBody;
use crate::error::ApiError;
use crate::storage::range::{self, Wanted};
use crate::storage::sniff::content_type_of;
use crate::storage::{Key, StorageError, records};

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct Signed {
    /// Expiry, Unix seconds.
    exp: i64,
    /// Hex HMAC-SHA256 of the key and `exp`.
    sig: String,
}

/// `GET /v1/files/{key}?exp=&sig=` (URLs come from the API's `url` fields).
#[utoipa::path(get, path = "/v1/files/{key}", tag = "files",
    params(("key" = String, Path, description = "The file's key, as in its URL"), Signed),
    responses(
        (status = 200, description = "The file"),
        (status = 206, description = "The byte range asked for"),
        (status = 304, description = "Not modified (If-None-Match)"),
        (status = 403, description = "Expired URL, or a signature that does not match the key", body = ErrorBody),
        (status = 404, description = "No such file (or it was deleted)", body = ErrorBody),
        (status = 416, description = "The range starts past the end")))]
pub(crate) async fn download(
    State(state): State<Media>,
    Path(key): Path<String>,
    ApiQuery(signed): ApiQuery<Signed>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let key = Key::parse(&key).map_err(|_| ApiError::not_found("file"))?;
    if let Err(why) = state.core.storage.verify_url(&key, signed.exp, &signed.sig) {
        tracing::debug!(key = %key, %why, "download URL refused");
        return Err(ApiError::forbidden());
    }
    // A deleted file's URLs die with the delete, not at their expiry.
    if records::by_key(&state.core.db, key.as_str())
        .await?
        .is_none()
    {
        return Err(ApiError::not_found("file"));
    }
    let head = match state.core.storage.head(&key).await {
        Ok(h) => h,
        Err(StorageError::NotFound) => return Err(ApiError::not_found("file")),
        Err(e) => return Err(e.into()),
    };
    let etag = head
        .e_tag
        .as_ref()
        .map(|t| format!("\"{}\"", t.trim_matches('"')));
    let max_age = (signed.exp - Utc::now().timestamp()).max(0);
    let mut common = HeaderMap::new();
    common.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    common.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type_of(key.extension())),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("private, max-age={max_age}")) {
        common.insert(header::CACHE_CONTROL, v);
    }
    // The file name is the key's last part: [A-Za-z0-9_-] and one dot, no quoting needed.
    if let Ok(v) = HeaderValue::from_str(&format!("inline; filename=\"{}\"", key.file_name())) {
        common.insert(header::CONTENT_DISPOSITION, v);
    }
    if let Some(v) = etag.as_deref().and_then(|t| HeaderValue::from_str(t).ok()) {
        common.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(
        &head
            .last_modified
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string(),
    ) {
        common.insert(header::LAST_MODIFIED, v);
    }
    let unchanged = etag.as_deref().is_some_and(|t| {
        headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|c| c.trim() == t || c.trim() == "*"))
    });
    if unchanged {
        return Ok((StatusCode::NOT_MODIFIED, common).into_response());
    }
    let wanted = range::parse(
        headers.get(header::RANGE).and_then(|v| v.to_str().ok()),
        head.size,
    );
    let (status, part) = match wanted {
        Wanted::All => (StatusCode::OK, None),
        Wanted::Part(r) => (StatusCode::PARTIAL_CONTENT, Some(r)),
        Wanted::Unsatisfiable => {
            let mut h = common;
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{}", head.size)) {
                h.insert(header::CONTENT_RANGE, v);
            }
            return Ok((StatusCode::RANGE_NOT_SATISFIABLE, h).into_response());
        }
    };
    let read = state.core.storage.read(&key, part.clone()).await?;
    let mut h = common;
    h.insert(
        header::CONTENT_LENGTH,
        HeaderValue::from(read.range.end - read.range.start),
    );
    if part.is_some() {
        let v = format!(
            "bytes {}-{}/{}",
            read.range.start,
            read.range.end.saturating_sub(1),
            head.size
        );
        if let Ok(v) = HeaderValue::from_str(&v) {
            h.insert(header::CONTENT_RANGE, v);
        }
    }
    metrics::counter!("conveyor_storage_bytes_served_total")
        .increment(read.range.end - read.range.start);
    Ok((status, h, Body::from_stream(read.bytes)).into_response())
}
