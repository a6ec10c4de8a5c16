//! `POST /v1/tasks/{id}/retry`: one click to try a failed task again (see
//! [`store::retry`](super::store::retry)).

use axum::extract::{Path, State};
use axum::response::Response;

use super::answers::{submit_error, view_json, with_location};
use super::state::{Tasks, visible};
use super::store::{self, Retried};
use super::submitter::announce;
use crate::api::AuthUser;
use crate::api::openapi::ErrorBody;
use crate::error::ApiError;

/// `POST /v1/tasks/{id}/retry` → 201 with the new task (it names this one in `retry_of`),
/// or 200 with the retry made before.
#[utoipa::path(post, path = "/v1/tasks/{id}/retry", operation_id = "retry_task", tag = "tasks", security(("api_key" = [])),
    params(("id" = String, Path, description = "The task to retry")),
    responses(
        (status = 201, description = "A new task: PENDING, credits reserved again, starting at the step that failed with the earlier steps' outputs (`retry_of` names this task)", body = super::view::TaskView),
        (status = 200, description = "Retried before: that retry (a double click makes one)", body = super::view::TaskView),
        crate::api::openapi::Unauthorized,
        (status = 402, description = "Insufficient credits (`needed`, `balance`)", body = ErrorBody),
        (status = 403, description = "`plan_required`: the caller's plan no longer includes the kind", body = ErrorBody),
        (status = 404, description = "No such task of the caller's", body = ErrorBody),
        (status = 409, description = "`not_retryable`: only a FAILED task, or one CANCELED before it started, is retried", body = ErrorBody),
        (status = 429, description = "`rate_limited` or `too_many_tasks_in_flight`; `Retry-After` says when", body = ErrorBody)))]
pub(crate) async fn retry(
    State(state): State<Tasks>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let t = visible(&state, &user, &id).await?;
    // An admin sees others' tasks; a retry charges the owner, so it is the owner's.
    if t.user_id != user.id {
        return Err(ApiError::not_found("task"));
    }
    let limits = &state.core.limits;
    let standing = limits.standing(&user.id).await;
    limits.take_for(&super::limits::SUBMITS, &standing).await?;
    super::entitled::plan_allows(limits.plans(), &standing, t.kind)?;
    let cap = limits.value_for(&super::limits::IN_FLIGHT, &standing).await;
    let max_payload = state.core.broker.max_payload();
    match store::retry(&state.core.db, &t, &standing, cap, max_payload)
        .await
        .map_err(submit_error)?
    {
        Retried::Made(task, event) => {
            super::metrics::credits("reserved", task.cost);
            let body = view_json(task)?;
            announce(&state.core.relay, &state.core.broker, vec![event]);
            Ok(with_location(201, body))
        }
        Retried::Before(task) => Ok(with_location(200, view_json(task)?)),
        Retried::Refused(why) => Err(ApiError::refused("not_retryable", why.into())),
    }
}
