//! `POST /v1/uploads`: a streamed multipart upload. The `purpose` field comes first, then
//! `file`; the bytes go to the store part by part (never whole in memory), sniffed,
//! measured and checksummed on the way. The owner's quota is reserved before the first
//! byte is stored: the request's length (or the purpose's limit, for a body of unknown
//! length) is reserved, and the difference given back once the size is known.

use axum::Json;
use axum::extract::multipart::MultipartRejection;
use axum::extract::{Multipart, State};
use axum::http::{HeaderMap, StatusCode};

use super::Media;
use crate::api::openapi::ErrorBody;
use crate::api::{ApiQuery, AuthUser};
use crate::domains::media::view::UploadView;
use crate::error::ApiError;
use crate::storage::records::{self, Dimensions, usage};
use crate::storage::sniff::{self, Purpose};
use crate::storage::{Key, WriteError};

/// Multipart framing around the file (boundaries, part headers): a request this much
/// over the purpose's limit may still carry a file within it.
const FRAMING: u64 = 64 * 1024;

fn bad_multipart(e: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request("file", format!("malformed multipart body: {e}"))
}

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
    /// `video`, `image` or `audio`; must come before `file`.
    purpose: String,
    /// The bytes. Their type is read from them, not from the file name or header.
    #[schema(format = Binary)]
    file: String,
}

/// `POST /v1/uploads` (`multipart/form-data`: `purpose`, then `file`).
#[utoipa::path(post, path = "/v1/uploads", operation_id = "create_upload", tag = "uploads", security(("api_key" = [])),
    params(UploadQuery),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Stored: READY, with size, sniffed type, SHA-256 and a signed URL", body = UploadView),
        (status = 400, description = "Malformed multipart body, or fields out of order", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 413, description = "`file_too_large` (the purpose's limit) or `storage_quota` (the tenant's quota); nothing stored", body = ErrorBody),
        (status = 422, description = "`unsupported_media_type` (the bytes are not a type the purpose takes: the upload is REJECTED), `empty_file`, or a bad `purpose`", body = ErrorBody)))]
pub(crate) async fn create(
    State(state): State<Media>,
    AuthUser(user): AuthUser,
    ApiQuery(q): ApiQuery<UploadQuery>,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<(StatusCode, Json<UploadView>), ApiError> {
    // Not a multipart body (no boundary, another type): a JSON 400 like every other.
    let mut multipart = multipart.map_err(|e| ApiError::BadRequest {
        code: "invalid_multipart",
        message: e.body_text(),
        field: None,
    })?;
    let storage = &state.core.storage;
    let db = &state.core.db;
    let parse = |text: &str| {
        Purpose::parse(text.trim())
            .ok_or_else(|| ApiError::invalid("purpose", "must be one of: video, image, audio"))
    };
    let length = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    // With `?purpose=`, the limit and the quota are checked before a byte of the body
    // is read; otherwise once the `purpose` field has arrived.
    let mut checked = None;
    if let Some(p) = q.purpose.as_deref() {
        let purpose = parse(p)?;
        checked = Some((purpose, admit(&state, &user.id, purpose, length).await?));
    }
    // Reading the fields may fail after the quota was reserved: give it back then.
    macro_rules! or_release {
        ($result:expr) => {
            match $result {
                Ok(v) => v,
                Err(e) => {
                    if let Some((_, reserved)) = checked {
                        usage::release(db, &user.id, reserved as i64).await?;
                    }
                    return Err(e);
                }
            }
        };
    }
    let first = or_release!(multipart.next_field().await.map_err(bad_multipart));
    let first = or_release!(
        first.ok_or_else(|| ApiError::bad_request("file", "the body has no `file` field"))
    );
    let field =
        if first.name() == Some("purpose") {
            let text = or_release!(first.text().await.map_err(bad_multipart));
            let purpose = or_release!(parse(&text));
            match checked {
                Some((p, _)) if p != purpose => or_release!(Err(ApiError::bad_request(
                    "purpose",
                    "the `purpose` field and the `purpose` query parameter differ",
                ))),
                Some(_) => {}
                None => checked = Some((purpose, admit(&state, &user.id, purpose, length).await?)),
            }
            let next = or_release!(multipart.next_field().await.map_err(bad_multipart));
            or_release!(next.ok_or_else(|| ApiError::bad_request(
                "file",
                "a `file` field must follow `purpose`"
            )))
        } else {
            first
        };
    let Some((purpose, reserve)) = checked else {
        return Err(ApiError::bad_request(
            "purpose",
            "give `purpose` in the query or as the first field, before `file`",
        ));
    };
    if field.name() != Some("file") {
        or_release!(Err(ApiError::bad_request(
            "file",
            "a `file` field must follow `purpose`"
        )))
    }
    let (limit, _) = caps(&state.core, &user.id, purpose).await;
    let row = records::create_pending(db, &user.id, purpose.as_str(), None, reserve, None).await?;
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
                    ApiError::Unprocessable {
                        code: "unsupported_media_type",
                        message: format!("upload {} REJECTED: {why}", row.id),
                        field: Some("file".into()),
                    },
                ),
                WriteError::TooLarge { .. } => ("too_large", too_large(purpose, limit)),
                WriteError::Empty => ("empty", ApiError::invalid("file", "the file is empty")),
                WriteError::Source(why) => ("aborted", bad_multipart(why)),
                WriteError::Store(_) => ("failed", ApiError::Internal(anyhow::anyhow!("{e}"))),
            };
            records::mark_rejected(db, &row, &e.to_string()).await?;
            metrics::counter!("conveyor_storage_uploads_total", "outcome" => outcome).increment(1);
            return Err(answer);
        }
    };
    let row = records::mark_ready(db, &row, &written, Dimensions::default())
        .await?
        .ok_or(ApiError::NotFound("upload"))?;
    metrics::counter!("conveyor_storage_uploads_total", "outcome" => "ready").increment(1);
    metrics::counter!("conveyor_storage_bytes_written_total").increment(written.size);
    let view = UploadView::of(storage, row).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Checks an upload of `purpose` announcing `length` bytes against the purpose's limit
/// and reserves its bytes from the owner's quota: the bytes reserved, or the refusal.
async fn admit(
    state: &Media,
    user: &str,
    purpose: Purpose,
    length: Option<u64>,
) -> Result<u64, ApiError> {
    let (limit, quota) = caps(&state.core, user, purpose).await;
    if length.is_some_and(|n| n > limit + FRAMING) {
        metrics::counter!("conveyor_storage_uploads_total", "outcome" => "too_large").increment(1);
        return Err(too_large(purpose, limit));
    }
    let reserve = length.map_or(limit, |n| n.min(limit));
    if !usage::reserve(&state.core.db, user, reserve, quota).await? {
        metrics::counter!("conveyor_storage_uploads_total", "outcome" => "over_quota").increment(1);
        return Err(over_quota(quota));
    }
    Ok(reserve)
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
    ApiError::TooLargeFor {
        code: "file_too_large",
        message: format!("{} uploads are limited to {limit} bytes", purpose.as_str()),
    }
}

pub(super) fn over_quota(quota: u64) -> ApiError {
    ApiError::TooLargeFor {
        code: "storage_quota",
        message: format!(
            "storing this would take you past your storage quota of {quota} bytes; delete files to make room"
        ),
    }
}
