//! Acting on dead letters: replay and discard one, replay a filter (a dry run counts).

use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::DeadLetters;
use super::view::OperatedView;
use super::view::operate_error;
use super::view::operated;
use super::view::parse_id;
use crate::api::openapi::ErrorBody;
use crate::api::{Admin, Core};
use crate::dead_letters::OperateError;
use crate::error::ApiError;

#[utoipa::path(post, path = "/v1/admin/dead-letters/{id}/replay", tag = "admin", operation_id = "replay_dead_letter",
    security(("api_key" = [])), params(("id" = i64, Path, description = "Dead letter id")),
    responses(
        (status = 200, description = "Sent back to its origin queue (same message id, fresh attempts), or `already` replayed", body = OperatedView),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such dead letter", body = ErrorBody),
        (status = 409, description = "Discarded, or malformed (not replayable)", body = ErrorBody),
        (status = 429, description = "Above `dead_letters.replay_per_second`; see `Retry-After`", body = ErrorBody)))]
pub(crate) async fn replay(
    State(DeadLetters {
        core: state,
        replay_limiter,
    }): State<DeadLetters>,
    Admin(user): Admin,
    Path(id): Path<String>,
) -> Result<axum::Json<OperatedView>, ApiError> {
    let id = parse_id(&id)?;
    if let Err(not_until) = replay_limiter.check() {
        let wait = not_until.wait_time_from(governor::clock::Clock::now(
            &governor::clock::DefaultClock::default(),
        ));
        return Err(ApiError::too_many(
            "rate_limited",
            format!(
                "replays are paced at dead_letters.replay_per_second; retry in {} ms",
                wait.as_millis()
            ),
            wait.as_secs().max(1),
        ));
    }
    let done = crate::dead_letters::replay(
        &state.db,
        state.broker.topology(),
        id,
        &format!("user:{}", user.id),
        state.broker.max_payload(),
    )
    .await
    .map_err(operate_error)?;
    if !done.already {
        state.relay.notify();
    }
    Ok(operated(done))
}

#[utoipa::path(post, path = "/v1/admin/dead-letters/{id}/discard", tag = "admin", operation_id = "discard_dead_letter",
    security(("api_key" = [])), params(("id" = i64, Path, description = "Dead letter id")),
    responses(
        (status = 200, description = "Marked dropped on purpose, or `already` discarded", body = OperatedView),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such dead letter", body = ErrorBody),
        (status = 409, description = "Already replayed", body = ErrorBody)))]
pub(crate) async fn discard(
    State(state): State<Core>,
    Admin(user): Admin,
    Path(id): Path<String>,
) -> Result<axum::Json<OperatedView>, ApiError> {
    let id = parse_id(&id)?;
    crate::dead_letters::discard(&state.db, id, &format!("user:{}", user.id))
        .await
        .map(operated)
        .map_err(operate_error)
}

/// Which dead letters a replay by filter takes.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayFilter {
    /// A queue key (`ai.short`, …).
    pub queue: String,
    /// Only this reason.
    pub reason: Option<String>,
    /// Also the letters parked as `needs_fix`.
    #[serde(default)]
    pub force: bool,
    /// Count only; send nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// At most this many replays in this call (1 to 100, default 20), oldest first, at
    /// `dead_letters.replay_per_second`; call again while `remaining` > 0.
    #[schema(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReplayFilterView {
    /// Letters the filter matches (before this call).
    pub matched: usize,
    /// Of the queue's letters, those parked as `needs_fix` (included only with `force`).
    pub parked: usize,
    /// Replayed by this call.
    pub replayed: Vec<i64>,
    /// Still to replay after this call.
    pub remaining: usize,
}

#[utoipa::path(post, path = "/v1/admin/dead-letters/replay", tag = "admin", operation_id = "replay_dead_letters_by_filter",
    security(("api_key" = [])), request_body = ReplayFilter,
    responses(
        (status = 200, description = "What the filter matches, what this call replayed and what remains", body = ReplayFilterView),
        (status = 400, description = "Bad queue or limit (named in `field`)", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 422, description = "An unknown field or a value of the wrong type (named in `field`)", body = ErrorBody)))]
pub(crate) async fn replay_filter(
    State(DeadLetters {
        core: state,
        replay_limiter,
    }): State<DeadLetters>,
    Admin(user): Admin,
    crate::api::ApiJson(f): crate::api::ApiJson<ReplayFilter>,
) -> Result<axum::Json<ReplayFilterView>, ApiError> {
    let topology = state.broker.topology();
    if topology.queue_spec(&f.queue).is_none() {
        return Err(ApiError::bad_request(
            "queue",
            format!("no queue `{}`", f.queue),
        ));
    }
    let limit = f.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::bad_request("limit", "must be 1 to 100"));
    }
    let plan =
        crate::dead_letters::replay_plan(&state.db, &f.queue, f.reason.as_deref(), f.force).await?;
    let matched = plan.ids.len();
    let mut replayed = Vec::new();
    if !f.dry_run {
        let actor = format!("user:{}", user.id);
        for id in plan.ids.iter().take(limit as usize) {
            // Paced like single replays, waiting rather than refusing: the caller asked
            // for this slice.
            replay_limiter.until_ready().await;
            let done = crate::dead_letters::replay(
                &state.db,
                topology,
                *id,
                &actor,
                state.broker.max_payload(),
            )
            .await;
            match done {
                Ok(o) if !o.already => replayed.push(*id),
                Ok(_) => {}
                // A letter another operator acted on meanwhile, or one not replayable
                // (malformed): left as it is, and not counted.
                Err(OperateError::Conflict { .. } | OperateError::NotReplayable { .. }) => {}
                Err(e) => return Err(operate_error(e)),
            }
        }
        if !replayed.is_empty() {
            state.relay.notify();
        }
    }
    let remaining = if f.dry_run {
        matched
    } else {
        matched.saturating_sub(limit as usize)
    };
    Ok(axum::Json(ReplayFilterView {
        matched,
        parked: plan.parked,
        replayed,
        remaining,
    }))
}
