//! Provider callbacks: `POST /v1/callbacks/providers/<provider>/<token>`. A parked job
//! is given its own URL when it is created; the token is the task's id and a secret
//! kept with its wait (128 random bits), so a forged or stale URL finds nothing (404)
//! and wakes nothing. Where the provider signs (`webhook_secret`), the signature is
//! checked too. A callback only wakes the check at once (the check reads the job from
//! the provider itself, so the callback's body is never trusted for the result);
//! duplicates and late ones find the check already done and change nothing. Polling
//! stays the safety net for callbacks that never come.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use subtle::ConstantTimeEq as _;

use super::store::check_message;
use crate::broker::Target;
use crate::domains::ai_tasks::entity::wait::PROVIDER;
use crate::domains::ai_tasks::kinds::TaskKind;
use crate::domains::ai_tasks::queues::AI_CHECK;
use crate::domains::ai_tasks::settings::AiSettings;
use crate::domains::ai_tasks::state::Tasks;
use crate::domains::ai_tasks::store::waits;
use crate::error::ApiError;
use crate::standard_webhooks as webhook;

/// The callback URL of a job that `kind`'s step `step` starts for `task_id`, when its
/// provider parks jobs and a public base URL is configured.
pub fn url(
    ai: &AiSettings,
    kind: TaskKind,
    step: &str,
    task_id: &str,
    token: &str,
) -> Option<String> {
    if ai.callback_base_url.is_empty() {
        return None;
    }
    let (name, p) = ai.provider_of(kind, step)?;
    p.protocol.parks().then(|| {
        format!(
            "{}/v1/callbacks/providers/{name}/{task_id}.{token}",
            ai.callback_base_url.trim_end_matches('/')
        )
    })
}

/// `POST /v1/callbacks/providers/{provider}/{token}`: 202 when it woke a check, 404 for
/// a token no waiting job has, 401 for a signature that does not match.
#[utoipa::path(post, path = "/v1/callbacks/providers/{provider}/{token}", tag = "tasks",
    params(("provider" = String, Path, description = "The `[ai.providers]` name"),
           ("token" = String, Path, description = "The job's callback token, as its URL was given")),
    request_body(content = String, description = "The provider's callback body (not trusted: the check reads the job itself)"),
    responses(
        (status = 202, description = "The job's check was woken"),
        (status = 401, description = "The provider's signature is missing or wrong", body = crate::api::openapi::ErrorBody),
        (status = 404, description = "No waiting job has this token", body = crate::api::openapi::ErrorBody)))]
pub(crate) async fn callback(
    State(state): State<Tasks>,
    Path((provider, token)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let not_found = || ApiError::not_found("waiting job");
    let (task_id, secret) = token
        .rsplit_once('.')
        .filter(|(_, secret)| !secret.is_empty())
        .ok_or_else(not_found)?;
    let w = waits::get(&state.core.db, task_id)
        .await
        .map_err(|e| ApiError::internal(e.into()))?
        .filter(|w| w.waiting_for == PROVIDER && w.provider == provider)
        .filter(|w| bool::from(w.token.as_bytes().ct_eq(secret.as_bytes())))
        .ok_or_else(not_found)?;
    let signing = state
        .ai
        .providers
        .get(&provider)
        .map(|p| p.webhook_secret.as_str())
        .unwrap_or_default();
    if !signing.is_empty() {
        let now = chrono::Utc::now().timestamp();
        if let Err(e) = webhook::verify(signing, &headers, &body, now) {
            tracing::warn!(task_id, provider, error = %e, "refused a provider callback");
            metrics::counter!("conveyor_ai_callbacks_total", "outcome" => "refused").increment(1);
            return Err(ApiError::unauthorized());
        }
    }
    let message = check_message(&w.task_id, w.attempt, w.checks);
    if let Err(e) = state
        .core
        .broker
        .publish(Target::Queue(&AI_CHECK), &message)
        .await
    {
        // The next poll finds the job anyway.
        tracing::warn!(task_id, error = %e, "waking a parked job's check failed");
    }
    metrics::counter!("conveyor_ai_callbacks_total", "outcome" => "woke").increment(1);
    Ok((StatusCode::ACCEPTED, axum::Json(json!({ "woken": true }))).into_response())
}
