//! What a kind takes beyond its prompt, checked at submission: a video analysis whose
//! extraction runs on FFmpeg analyses an upload, `params.upload_id`, which must be a
//! READY video of the caller's (someone else's upload, a pending or rejected one, or an
//! image is 422 naming the field). The extraction checks it again when it runs.

use sea_orm::DatabaseConnection;
use serde_json::Value;

use super::TaskKind;
use super::executor::ffmpeg::probe;
use super::kinds::Lane;
use super::settings::{AiSettings, Protocol};
use crate::error::ApiError;
use crate::storage::Storage;
use crate::storage::records::{self, READY};

const FIELD: &str = "params.upload_id";

/// Whether `kind`'s extraction is FFmpeg's (and so needs an upload).
fn needs_upload(ai: &AiSettings, kind: TaskKind) -> bool {
    kind == TaskKind::VideoAnalysis
        && ai
            .provider_of(kind, "extract_audio")
            .is_some_and(|(_, p)| p.protocol == Protocol::Ffmpeg)
}

/// Checks the inputs `params` names for `user`; the lane the task takes (a video longer
/// than `long_video_secs` takes the long one; its length read with ffprobe where it is
/// stored, without downloading it).
pub async fn check(
    db: &DatabaseConnection,
    storage: &Storage,
    ai: &AiSettings,
    user: &str,
    kind: TaskKind,
    params: &Value,
) -> Result<Lane, ApiError> {
    if !needs_upload(ai, kind) {
        return Ok(Lane::Regular);
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
        Some(u) if u.purpose == "video" && u.status == READY => {
            Ok(lane(storage, ai, kind, &u).await)
        }
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

/// The lane of a video `u`: long when ffprobe says it runs past `long_video_secs`. A video
/// that cannot be probed here (no ffprobe on the API's machine, a store it cannot reach)
/// takes the regular lane; the extraction reads it anyway.
async fn lane(storage: &Storage, ai: &AiSettings, kind: TaskKind, u: &records::Object) -> Lane {
    let long_secs = ai.kinds.get(kind.as_str()).map_or(0, |k| k.long_video_secs);
    let Some(key) = u.store_key.as_deref().filter(|_| long_secs > 0) else {
        return Lane::Regular;
    };
    let Ok(key) = crate::storage::Key::parse(key) else {
        return Lane::Regular;
    };
    let Ok(source) = storage.readable_at(&key).await else {
        return Lane::Regular;
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let probed = tokio::time::timeout(
        std::time::Duration::from_secs(15),
        probe::probe(&source, &cancel),
    )
    .await;
    match probed {
        Ok(Ok(p)) if p.duration_s > long_secs as f64 => Lane::Long,
        Ok(Ok(_)) => Lane::Regular,
        other => {
            tracing::warn!(upload = %u.id, outcome = ?other.map(|r| r.err()), "could not read the video's length; the regular lane");
            Lane::Regular
        }
    }
}
