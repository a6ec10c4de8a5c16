//! What a kind takes beyond its prompt, checked at submission: a video analysis whose
//! extraction runs on FFmpeg analyses an upload, `params.upload_id`, which must be a
//! READY video of the caller's (someone else's upload, a pending or rejected one, or an
//! image is 422 naming the field). The extraction checks it again when it runs.

use sea_orm::{DatabaseConnection, EntityTrait as _};
use serde_json::Value;

use super::kinds::{Lane, TaskKind};
use super::settings::{AiSettings, Protocol};
use crate::error::ApiError;
use crate::providers::ffmpeg::length;
use crate::storage::Storage;
use crate::storage::records::{self, ObjectStatus};

const FIELD: &str = "params.upload_id";

/// Whether `kind`'s extraction is FFmpeg's (and so needs an upload).
fn needs_upload(ai: &AiSettings, kind: TaskKind) -> bool {
    kind == TaskKind::VideoAnalysis
        && ai
            .provider_of(kind, "extract_audio")
            .is_some_and(|(_, p)| p.protocol == Protocol::Ffmpeg)
}

/// Checks the inputs `params` names for `user`; the lane the task takes (a video longer
/// than `long_video_secs` takes the long one; its length read with ffprobe from a file
/// on this machine: the local store's, or the ends of it copied from the bucket). A
/// length not known yet is read only when `user`'s balance covers `cost` (else 402, as
/// the submission would be), and once per upload ([`length::of_upload`]).
pub async fn check(
    db: &DatabaseConnection,
    storage: &Storage,
    ai: &AiSettings,
    user: &str,
    kind: TaskKind,
    params: &Value,
    cost: i64,
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
        .map_err(|e| ApiError::internal(e.into()))?;
    match upload {
        Some(u) if u.purpose == "video" && u.status == ObjectStatus::Ready => {
            lane(db, storage, ai, kind, &u, cost).await
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

/// The lane of a video `u`: long when it runs past `long_video_secs`.
async fn lane(
    db: &DatabaseConnection,
    storage: &Storage,
    ai: &AiSettings,
    kind: TaskKind,
    u: &records::Object,
    cost: i64,
) -> Result<Lane, ApiError> {
    let long_secs = ai.kinds.get(kind.as_str()).map_or(0, |k| k.long_video_secs);
    if long_secs == 0 {
        return Ok(Lane::Regular);
    }
    let duration_ms = match u.duration_ms {
        Some(ms) => Some(ms),
        // Not probed for a submission its credits would refuse (a probe runs ffprobe on
        // this machine); its reservation answers 402, or an idempotent retry of one that
        // was accepted gets its stored answer (which a 402 here would hide).
        None if !covered(db, &u.user_id, cost).await? => None,
        None => length::of_upload(db, storage, u).await,
    };
    Ok(match duration_ms {
        Some(ms) if ms > (long_secs * 1000) as i64 => Lane::Long,
        _ => Lane::Regular,
    })
}

/// Whether `user`'s balance covers `cost` (the submission's own reservation is still
/// what decides).
async fn covered(db: &DatabaseConnection, user: &str, cost: i64) -> Result<bool, ApiError> {
    if cost <= 0 {
        return Ok(true);
    }
    let balance = crate::users::entity::user::Entity::find_by_id(user.to_owned())
        .one(db)
        .await?
        .map_or(0, |u| u.credits);
    Ok(balance >= cost)
}
