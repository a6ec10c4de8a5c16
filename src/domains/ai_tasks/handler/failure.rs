//! A step that failed: retried, or failed with its refund; and the failure text a
//! tenant may read.

use super::*;

use crate::broker::{DeadReason, Envelope};
use crate::consumer::{Context, Fate, HandlerError};
use crate::domains::ai_tasks::kinds::Status;
use crate::domains::ai_tasks::messages::{RunStep, publish_events};
use crate::domains::ai_tasks::store::{self, Change, Guard};

impl AiTaskHandler {
    /// Records a failed step: RETRYING, or FAILED with its refund.
    pub(super) async fn failed(
        &self,
        ctx: &Context,
        msg: &Envelope,
        fate: &Fate,
    ) -> Result<(), HandlerError> {
        let Ok(run) = serde_json::from_value::<RunStep>(msg.payload.clone()) else {
            return Ok(());
        };
        let event = match fate {
            Fate::Retry {
                error,
                next_attempt,
            } => {
                let error = &public_error(&run.task_id, error);
                let g = Guard::status(&[Status::Processing]).at_step(run.step);
                let change = Change {
                    status: Some(Status::Retrying),
                    release_lease: true,
                    error: Some(error.clone()),
                    message: Some(format!("retrying (attempt {next_attempt}): {error}")),
                    ..Default::default()
                };
                store::apply_now(&ctx.db, &self.events, &run.task_id, &g, change)
                    .await
                    .map_err(transient)?
            }
            Fate::DeadLetter { error, reason } => {
                let error = &match reason {
                    DeadReason::CrashLoop => {
                        "crash_loop: this task kept stopping its worker and was set aside"
                            .to_owned()
                    }
                    DeadReason::Exhausted => {
                        format!("retries_exhausted: {}", public_error(&run.task_id, error))
                    }
                    _ => public_error(&run.task_id, error),
                };
                // Only while the task is still at this message's step: a stale repeat of
                // a step that already committed (no fence row stops it any more, the
                // task's state does) must not fail a task that has moved on.
                let g = Guard::status(&Status::ACTIVE).at_step(run.step);
                store::finish_unsuccessfully(
                    &ctx.db,
                    &self.events,
                    &run.task_id,
                    &g,
                    Status::Failed,
                    Some(error.clone()),
                )
                .await
                .map_err(transient)?
            }
        };
        if let Some((_, ev)) = event {
            publish_events(ctx.broker.as_ref(), &[ev]).await;
        }
        Ok(())
    }
}

/// Failure classes a tenant may read, as the handler words them; anything else (a
/// database error, a panic's text, a broker error) is internal: logged with the task id,
/// shown as `internal_error`.
pub(super) const PUBLIC_CODES: [&str; 9] = [
    "provider_unavailable:",
    "provider_rejected:",
    "deadline_exceeded:",
    "no_audio_track:",
    "media_unreadable:",
    "input_missing:",
    "input_unavailable:",
    "storage_quota:",
    "output_too_large:",
];

/// Failures of the task's own input, which the tenant can act on: the code a step's
/// permanent error starts with, and what the tenant reads (never the tool's own words).
const INPUT_FAILURES: [(&str, &str); 6] = [
    (
        "no_audio_track",
        "the video has no audio track to transcribe",
    ),
    (
        "media_unreadable",
        "the upload could not be read as a video",
    ),
    ("input_missing", "the task's input is missing"),
    (
        "input_unavailable",
        "the task's upload is not a ready video of its owner's",
    ),
    (
        "storage_quota",
        "storing the extracted audio and keyframes would take you past your storage quota; delete files to make room",
    ),
    (
        "output_too_large",
        "the video's extracted audio is larger than this deployment extracts from one video",
    ),
];

/// The public wording of a permanent step failure that is the input's fault, if it is.
pub(super) fn input_failure(raw: &str, step: &str) -> Option<String> {
    INPUT_FAILURES
        .iter()
        .find(|(code, _)| raw.strip_prefix(code).is_some_and(|r| r.starts_with(':')))
        .map(|(code, said)| format!("{code}: {said} ({step})"))
}

/// What a tenant reads of a failure (`tasks.error`, event messages): a stable code and a
/// short message, never internal detail.
pub(super) fn public_error(task_id: &str, raw: &str) -> String {
    if PUBLIC_CODES.iter().any(|c| raw.starts_with(c)) {
        return raw.to_owned();
    }
    tracing::warn!(
        task_id,
        error = raw,
        "task step failed (detail kept from the tenant)"
    );
    format!("internal_error: the platform could not run this step (task {task_id})")
}
