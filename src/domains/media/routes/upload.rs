//! `POST /v1/uploads`: a streamed multipart upload. The `purpose` field comes first, then
//! `file`; the bytes go to the store part by part (never whole in memory), sniffed,
//! measured and checksummed on the way. The owner's quota is reserved before the first
//! byte is stored: the request's length (or the purpose's limit, for a body of unknown
//! length) is reserved, and the difference given back once the size is known.
//!
//! The file is the only large part: the form before it is bounded in size and must
//! arrive within `server.header_read_timeout_ms` ([`super::form`]), and a tenant has at
//! most `limits.uploads_concurrent` uploads in progress on this instance
//! ([`crate::domains::media::limits`]).

use std::time::Duration;

use axum::Json;
use axum::extract::{FromRequest as _, Multipart, Request, State};
use axum::http::StatusCode;

use super::Media;
use super::form::{self, FRAMING, Meter};
use crate::api::openapi::ErrorBody;
use crate::api::{ApiQuery, AuthUser};
use crate::domains::media::limits;
use crate::domains::media::view::UploadView;
use crate::error::ApiError;
use crate::storage::records::{self, Dimensions, usage};
use crate::storage::sniff::{self, Purpose};
use crate::storage::{Key, WriteError};
use tokio::time::Instant;

#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct UploadQuery {
    /// `video`, `image` or `audio`: here, the limit and the quota are checked before the
    /// body is read (a refusal costs the client nothing); or as the form's first field.
    purpose: Option<String>,
}

/// The `multipart/form-data` body of an upload (documentation only: it is streamed).
#[allow(dead_code)]
#[derive(utoipa::ToSchema)]
pub(crate) struct UploadForm {
    /// `video`, `image` or `audio`; must come before `file`. At most 256 bytes.
    #[schema(max_length = 256)]
    purpose: String,
    /// The bytes. Their type is read from them, not from the file name or header.
    #[schema(format = Binary)]
    file: String,
}

/// An upload let in: its purpose, the bytes reserved from the quota, its size limit.
#[derive(Debug, Clone, Copy)]
struct Admitted {
    purpose: Purpose,
    reserved: u64,
    limit: u64,
}

/// `POST /v1/uploads` (`multipart/form-data`: `purpose`, then `file`).
#[utoipa::path(post, path = "/v1/uploads", operation_id = "create_upload", tag = "uploads", security(("api_key" = [])),
    params(UploadQuery),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Stored: READY, with size, sniffed type, SHA-256 and a signed URL", body = UploadView),
        (status = 400, description = "Malformed multipart body, or fields out of order", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        (status = 408, description = "`form_timeout`: the form before the file's bytes (`purpose`, the parts' headers) did not arrive within `server.header_read_timeout_ms`", body = ErrorBody),
        (status = 413, description = "`file_too_large` (the purpose's limit), `storage_quota` (the tenant's quota), `field_too_large` (a field other than `file` over 256 bytes, named in `field`) or `form_too_large` (the form before the file over 32 KiB); nothing stored", body = ErrorBody),
        (status = 422, description = "`unsupported_media_type` (the bytes are not a type the purpose takes: the upload is REJECTED), `empty_file`, or a bad `purpose`", body = ErrorBody),
        (status = 429, description = "`too_many_uploads`: the tenant has `limits.uploads_concurrent` uploads in progress on this server; `Retry-After` says when to try again", body = ErrorBody)))]
pub(crate) async fn create(
    State(state): State<Media>,
    AuthUser(user): AuthUser,
    ApiQuery(q): ApiQuery<UploadQuery>,
    req: Request,
) -> Result<(StatusCode, Json<UploadView>), ApiError> {
    // Held until the answer: an upload in progress holds a connection and memory.
    let _place = limits::hold(&state.core.limits, &user.id).await?;
    let length = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let meter = Meter::new();
    let (parts, body) = req.into_parts();
    let req = Request::from_parts(parts, meter.body(body));
    // Not a multipart body (no boundary, another type): a JSON 400 like every other.
    let mut multipart = Multipart::from_request(req, &())
        .await
        .map_err(|e| ApiError::malformed("invalid_multipart", e.body_text()))?;
    let db = &state.core.db;
    // With `?purpose=`, the limit and the quota are checked before a byte of the body
    // is read; otherwise once the `purpose` field has arrived.
    let mut admitted = None;
    if let Some(p) = q.purpose.as_deref() {
        admitted = Some(admit(&state, &user.id, parse(p)?, length).await?);
    }
    // The form before the file is a few hundred bytes: a client that does not send it
    // within the time a request's header gets (slowloris) is cut off like one.
    let deadline = Instant::now() + Duration::from_millis(state.core.server.header_read_timeout_ms);
    // What the client owes first: `file` when the query gave the purpose.
    let awaited = if q.purpose.is_some() {
        "file"
    } else {
        "purpose"
    };
    let head = match form::next_part(&mut multipart, &meter, deadline, awaited).await {
        Ok(Some(first)) if first.name() == Some("purpose") => {
            match form::small_field(first, "purpose", &meter, deadline).await {
                Ok(text) => form::next_part(&mut multipart, &meter, deadline, "file")
                    .await
                    .map(|file| (Some(text), file)),
                Err(e) => Err(e),
            }
        }
        Ok(first) => Ok((None, first)),
        Err(e) => Err(e),
    };
    let (purpose, file) = match head {
        Ok(head) => head,
        Err(e) => return Err(release(&state, &user.id, admitted, e).await),
    };
    let admitted = match (admitted, purpose.as_deref()) {
        (Some(a), Some(text)) => match parse(text) {
            Ok(p) if p == a.purpose => a,
            Ok(_) => {
                let differ = ApiError::bad_request(
                    "purpose",
                    "the `purpose` field and the `purpose` query parameter differ",
                );
                return Err(release(&state, &user.id, Some(a), differ).await);
            }
            Err(e) => return Err(release(&state, &user.id, Some(a), e).await),
        },
        (Some(a), None) => a,
        (None, Some(text)) => admit(&state, &user.id, parse(text)?, length).await?,
        (None, None) => {
            return Err(ApiError::bad_request(
                "purpose",
                "give `purpose` in the query or as the first field, before `file`",
            ));
        }
    };
    let Some(field) = file.filter(|f| f.name() == Some("file")) else {
        let missing = ApiError::bad_request("file", "a `file` field must follow `purpose`");
        return Err(release(&state, &user.id, Some(admitted), missing).await);
    };
    let Admitted {
        purpose,
        reserved,
        limit,
    } = admitted;
    meter.file_begins(limit + FRAMING);
    let storage = &state.core.storage;
    let row = records::create_pending(db, &user.id, purpose.as_str(), None, reserved, None).await?;
    let written = storage
        .write_stream(
            field,
            limit,
            |head| sniff::check(purpose, head),
            |kind| {
                Ok(Key::new(
                    &user.id,
                    purpose.as_str(),
                    &row.id,
                    kind.extension,
                )?)
            },
        )
        .await;
    let written = match written {
        Ok(w) => w,
        Err(e) => {
            let (outcome, answer) = match &e {
                WriteError::Rejected(why) => (
                    "rejected",
                    ApiError::unprocessable(
                        "unsupported_media_type",
                        format!("upload {} REJECTED: {why}", row.id),
                    )
                    .with_field(Some("file".into())),
                ),
                WriteError::TooLarge { .. } => ("too_large", too_large(purpose, limit)),
                // The body ran past the purpose's limit plus framing (no length given).
                WriteError::Source(_) if meter.over() => ("too_large", too_large(purpose, limit)),
                WriteError::Empty => ("empty", ApiError::invalid("file", "the file is empty")),
                WriteError::Source(why) => ("aborted", form::malformed(why)),
                WriteError::Store(_) => ("failed", ApiError::internal(anyhow::anyhow!("{e}"))),
            };
            records::mark_rejected(db, &row, &e.to_string()).await?;
            metrics::counter!("conveyor_storage_uploads_total", "outcome" => outcome).increment(1);
            return Err(answer);
        }
    };
    let row = records::mark_ready(db, &row, &written, Dimensions::default())
        .await?
        .ok_or(ApiError::not_found("upload"))?;
    metrics::counter!("conveyor_storage_uploads_total", "outcome" => "ready").increment(1);
    metrics::counter!("conveyor_storage_bytes_written_total").increment(written.size);
    let view = UploadView::of(storage, row).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

fn parse(text: &str) -> Result<Purpose, ApiError> {
    Purpose::parse(text.trim())
        .ok_or_else(|| ApiError::invalid("purpose", "must be one of: video, image, audio"))
}

/// Gives back what `admitted` reserved (nothing stored: the upload failed before its
/// row), then answers `e`.
async fn release(state: &Media, user: &str, admitted: Option<Admitted>, e: ApiError) -> ApiError {
    if let Some(a) = admitted
        && let Err(db) = usage::release(&state.core.db, user, a.reserved as i64).await
    {
        return db.into();
    }
    e
}

/// Checks an upload of `purpose` announcing `length` bytes against the purpose's limit
/// and reserves its bytes from the owner's quota: what was let in, or the refusal.
async fn admit(
    state: &Media,
    user: &str,
    purpose: Purpose,
    length: Option<u64>,
) -> Result<Admitted, ApiError> {
    let (limit, quota) = caps(&state.core, user, purpose).await;
    if length.is_some_and(|n| n > limit + FRAMING) {
        metrics::counter!("conveyor_storage_uploads_total", "outcome" => "too_large").increment(1);
        return Err(too_large(purpose, limit));
    }
    let reserved = length.map_or(limit, |n| n.min(limit));
    if !usage::reserve(&state.core.db, user, reserved, quota).await? {
        metrics::counter!("conveyor_storage_uploads_total", "outcome" => "over_quota").increment(1);
        return Err(over_quota(quota));
    }
    Ok(Admitted {
        purpose,
        reserved,
        limit,
    })
}

/// The largest upload of `purpose` and the storage quota of `user`'s plan (each within
/// the `[storage]` limits).
pub(super) async fn caps(core: &crate::api::Core, user: &str, purpose: Purpose) -> (u64, u64) {
    let settings = &core.storage.settings;
    let standing = core.limits.standing(user).await;
    let plan = core.limits.plans().get(&standing.plan);
    (
        plan.upload_max(settings.max_bytes(purpose)),
        plan.storage_quota(settings.quota_bytes),
    )
}

pub(super) fn too_large(purpose: Purpose, limit: u64) -> ApiError {
    ApiError::too_large_for(
        "file_too_large",
        format!("{} uploads are limited to {limit} bytes", purpose.as_str()),
    )
}

pub(super) fn over_quota(quota: u64) -> ApiError {
    ApiError::too_large_for(
        "storage_quota",
        format!(
            "storing this would take you past your storage quota of {quota} bytes; delete files to make room"
        ),
    )
}
