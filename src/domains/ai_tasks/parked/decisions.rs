//! HTTP: approval decisions. `POST /v1/tasks/{id}/approval` (the owner or an admin) and
//! `POST /v1/approvals/{token}` (the one-time link a waiting task shows its owner, for a
//! reviewer without an account) take `{"decision": "approve" | "reject", "comment"}`.
//! A task of someone else's, or a link that is not (or no longer) a waiting approval's,
//! is 404; a task that waits for nothing is 409.

use axum::extract::{Path, State};
use serde::Deserialize;
use subtle::ConstantTimeEq as _;

use super::approval;
use crate::api::openapi::ErrorBody;
use crate::api::{ApiJson, AuthUser};
use crate::domains::ai_tasks::entity::wait::APPROVAL;
use crate::domains::ai_tasks::messages::publish_events;
use crate::domains::ai_tasks::state::{Tasks, visible};
use crate::domains::ai_tasks::store::waits::{self, Wait};
use crate::domains::ai_tasks::view::TaskView;
use crate::error::ApiError;

/// Longest comment kept with a decision.
const MAX_COMMENT: usize = 500;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    /// `approve` or `reject`.
    pub decision: String,
    /// Why (kept in the audit log; a rejection's shows in the task's error).
    #[schema(max_length = 500)]
    pub comment: Option<String>,
}

enum Decision {
    Approve,
    Reject,
}

impl DecisionRequest {
    fn checked(&self) -> Result<Decision, ApiError> {
        if self
            .comment
            .as_ref()
            .is_some_and(|c| c.chars().count() > MAX_COMMENT)
        {
            return Err(ApiError::invalid(
                "comment",
                format!("at most {MAX_COMMENT} characters"),
            ));
        }
        match self.decision.as_str() {
            "approve" => Ok(Decision::Approve),
            "reject" => Ok(Decision::Reject),
            other => Err(ApiError::invalid(
                "decision",
                format!("{other:?} is not a decision: approve or reject"),
            )),
        }
    }
}

/// `POST /v1/tasks/{id}/approval`.
#[utoipa::path(post, path = "/v1/tasks/{id}/approval", tag = "tasks", security(("api_key" = [])),
    params(("id" = String, Path, description = "Task id")),
    request_body = DecisionRequest,
    responses(
        (status = 200, description = "Decided: PROCESSING (the step runs) or CANCELED (refunded per the cancel policy)", body = TaskView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such task of the caller's", body = ErrorBody),
        (status = 409, description = "The task waits for no approval", body = ErrorBody),
        (status = 422, description = "Not a decision, or a comment too long", body = ErrorBody)))]
pub(crate) async fn decide(
    State(state): State<Tasks>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> Result<axum::Json<TaskView>, ApiError> {
    // Someone else's task is 404 whatever the body says.
    let t = visible(&state, &user, &id).await?;
    // As the JSON extractor words it: serde's message names the field.
    let body: DecisionRequest = serde_json::from_value(body).map_err(|e| {
        let message = e.to_string();
        let field = message.split('`').nth(1).map(str::to_owned);
        ApiError::unprocessable("invalid_field", message).with_field(field)
    })?;
    let decision = body.checked()?;
    let w = waits::get(&state.core.db, &t.id)
        .await?
        .filter(|w| w.waiting_for == APPROVAL)
        .ok_or_else(|| {
            ApiError::conflict(format!(
                "task is {}, not waiting for an approval",
                t.status.as_str()
            ))
        })?;
    apply(
        &state,
        &w,
        decision,
        &format!("user:{}", user.id),
        body.comment.as_deref(),
    )
    .await
}

/// `POST /v1/approvals/{token}`: the one-time link.
#[utoipa::path(post, path = "/v1/approvals/{token}", tag = "tasks",
    params(("token" = String, Path, description = "The approval link's token, as the waiting task shows it")),
    request_body = DecisionRequest,
    responses(
        (status = 200, description = "Decided", body = TaskView),
        (status = 404, description = "No approval waits on this link (decided, expired, or never)", body = ErrorBody),
        (status = 422, description = "Not a decision, or a comment too long", body = ErrorBody)))]
pub(crate) async fn decide_by_link(
    State(state): State<Tasks>,
    Path(token): Path<String>,
    ApiJson(body): ApiJson<DecisionRequest>,
) -> Result<axum::Json<TaskView>, ApiError> {
    let decision = body.checked()?;
    let not_found = || ApiError::not_found("approval");
    let (task_id, secret) = token.rsplit_once('.').ok_or_else(not_found)?;
    let w = waits::get(&state.core.db, task_id)
        .await?
        .filter(|w| w.waiting_for == APPROVAL)
        .filter(|w| bool::from(w.token.as_bytes().ct_eq(secret.as_bytes())))
        .ok_or_else(not_found)?;
    apply(
        &state,
        &w,
        decision,
        "approval-link",
        body.comment.as_deref(),
    )
    .await
}

async fn apply(
    state: &Tasks,
    w: &Wait,
    decision: Decision,
    actor: &str,
    comment: Option<&str>,
) -> Result<axum::Json<TaskView>, ApiError> {
    let db = &state.core.db;
    let decided = match decision {
        Decision::Approve => {
            let max_payload = state.core.broker.topology().max_payload_bytes;
            approval::approve(db, &state.events, w, actor, comment, max_payload)
                .await
                .map_err(|e| ApiError::internal(e.into()))?
        }
        Decision::Reject => {
            let reason = match comment {
                Some(c) => format!("rejected: {c}"),
                None => "rejected".to_owned(),
            };
            let percent = state.ai.cancel_refund_started_percent;
            approval::reject(db, &state.events, w, reason, actor, percent)
                .await?
                .map(|(t, ev, _)| (t, ev))
        }
    };
    let Some((t, ev)) = decided else {
        return Err(ApiError::conflict(
            "the approval was already decided".into(),
        ));
    };
    state.core.relay.notify();
    publish_events(state.core.broker.as_ref(), &[ev]).await;
    Ok(axum::Json(t.into()))
}
