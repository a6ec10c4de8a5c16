//! What a kind takes beyond its prompt, checked at submission: a video analysis whose
//! extraction runs on FFmpeg analyses an upload, `params.upload_id`, which must be a
//! READY video of the caller's (someone else's upload, a pending or rejected one, or an
//! image is 422 naming the field). The extraction checks it again when it runs.

use sea_orm::DatabaseConnection;
use serde_json::Value;

use super::TaskKind;
use super::settings::{AiSettings, Protocol};
use crate::error::ApiError;
use crate::storage::records::{self, READY};

const FIELD: &str = "params.upload_id";

/// Whether `kind`'s extraction is FFmpeg's (and so needs an upload).
fn needs_upload(ai: &AiSettings, kind: TaskKind) -> bool {
    kind == TaskKind::VideoAnalysis
        && ai
            .provider_of(kind, "extract_audio")
            .is_some_and(|(_, p)| p.protocol == Protocol::Ffmpeg)
}

/// Checks the inputs `params` names for `user`.
pub async fn check(
    db: &DatabaseConnection,
    ai: &AiSettings,
    user: &str,
    kind: TaskKind,
    params: &Value,
) -> Result<(), ApiError> {
    if !needs_upload(ai, kind) {
        return Ok(());
    }
    let Some(id) = params.get("upload_id").and_then(Value::as_str) else {
        return Err(ApiError::invalid(
            FIELD,
            "a video analysis needs params.upload_id: the id of a READY video upload (POST /v1/uploads?purpose=video)",
        ));
    };
    let upload = records::find(db, user, id)
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    match upload {
        Some(u) if u.purpose == "video" && u.status == READY => Ok(()),
        Some(u) if u.purpose != "video" => Err(ApiError::invalid(
            FIELD,
            format!("upload {id} is a {} upload, not a video", u.purpose),
        )),
        Some(u) => Err(ApiError::invalid(
            FIELD,
            format!("upload {id} is {}, not READY", u.status),
        )),
        None => Err(ApiError::invalid(FIELD, format!("no upload {id} of yours"))),
    }
}
