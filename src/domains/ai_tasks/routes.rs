//! HTTP: submit, read, list and cancel tasks. Every read and write is scoped to the
//! caller (another user's task is 404); admins may read any task.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::kinds::{ALL_KINDS, Status, TaskKind};
use super::messages::publish_events;
use super::store::{self, NewTask};
use super::submitter::announce;
pub use super::view::TaskView;
use crate::api::openapi::ErrorBody;
use crate::api::{ApiJson, ApiQuery, AuthUser};
use crate::error::ApiError;
use crate::idempotency::{self, IdempotencyKey, Once};

use super::answers::{submit_error, view_json, with_location};
pub use super::state::Tasks;
use super::state::visible;

pub fn routes(state: Tasks) -> Router {
    Router::new()
        .route("/v1/tasks", post(submit).get(list))
        .route("/v1/tasks/{id}", get(read))
        .route("/v1/tasks/{id}/cancel", post(cancel))
        .route("/v1/tasks/{id}/retry", post(super::retry::retry))
        .route("/v1/admin/tasks", get(super::admin::find))
        .route("/v1/admin/tasks/bulk", post(super::admin::bulk))
        .route("/v1/me/usage", get(super::usage::routes::usage))
        .route(
            "/v1/tasks/{id}/approval",
            post(super::parked::decisions::decide),
        )
        .route(
            "/v1/approvals/{token}",
            post(super::parked::decisions::decide_by_link),
        )
        .route(
            "/v1/callbacks/providers/{provider}/{token}",
            post(super::parked::callbacks::callback),
        )
        .with_state(state)
}

/// The routes' OpenAPI entries.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(
        submit,
        list,
        read,
        cancel,
        super::retry::retry,
        super::admin::find,
        super::admin::bulk,
        super::usage::routes::usage,
        super::parked::callbacks::callback,
        super::parked::decisions::decide,
        super::parked::decisions::decide_by_link
    ),
    tags((name = "tasks", description = "AI generation tasks"))
)]
pub struct Doc;

#[derive(Debug, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitRequest {
    #[schema(value_type = TaskKind)]
    pub kind: String,
    /// Not blank; at most `ai.max_prompt_chars` characters (4000 by default).
    #[schema(min_length = 1, max_length = 4000, pattern = r"\S")]
    pub prompt: String,
    /// A JSON object of at most `ai.max_params_bytes` bytes (16 KiB by default), passed
    /// to the provider.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub params: Option<Value>,
    /// The client's own labels: a flat object of at most 16 string values (keys of 1 to
    /// 40 letters, digits, `_`, `-`, `.`; values of at most 200 characters), returned in
    /// the task's view and webhook bodies; tasks are found by them
    /// (`GET /v1/tasks?metadata=campaign:42`).
    #[serde(default)]
    #[schema(value_type = Option<std::collections::HashMap<String, String>>)]
    pub metadata: Option<Value>,
}

/// Checks a submission; the error names the field.
fn validate(state: &Tasks, req: &SubmitRequest) -> Result<(TaskKind, Value), ApiError> {
    let kind = TaskKind::parse(&req.kind).ok_or_else(|| {
        ApiError::invalid(
            "kind",
            format!(
                "unknown kind `{}`; expected one of {}",
                req.kind,
                ALL_KINDS.map(|k| k.as_str()).join(", ")
            ),
        )
    })?;
    let ai = &state.ai;
    let chars = req.prompt.chars().count();
    if req.prompt.trim().is_empty() || chars > ai.max_prompt_chars {
        return Err(ApiError::invalid(
            "prompt",
            format!(
                "prompt must be 1 to {} characters (got {chars})",
                ai.max_prompt_chars
            ),
        ));
    }
    let params = req.params.clone().unwrap_or_else(|| json!({}));
    if !params.is_object() || params.to_string().len() > ai.max_params_bytes {
        return Err(ApiError::invalid(
            "params",
            format!(
                "params must be a JSON object of at most {} bytes",
                ai.max_params_bytes
            ),
        ));
    }
    // Keys starting with `_` are the server's (a long video's lane).
    if let Some(key) = params
        .as_object()
        .and_then(|o| o.keys().find(|k| k.starts_with('_')))
    {
        return Err(ApiError::invalid(
            format!("params.{key}"),
            "params starting with `_` are reserved for the server",
        ));
    }
    if let Some(sim) = params.get("simulate") {
        if !ai.allow_failure_injection {
            return Err(ApiError::invalid(
                "params.simulate",
                "params.simulate is disabled on this server (ai.allow_failure_injection)",
            ));
        }
        // Even where injection is on, a step may not outlast its kind's deadline.
        let deadline_ms = ai
            .kinds
            .get(kind.as_str())
            .map_or(0, |k| k.deadline_secs.saturating_mul(1000));
        if let Some(step) = sim.get("step_ms")
            && step.as_u64().is_none_or(|ms| ms > deadline_ms)
        {
            return Err(ApiError::invalid(
                "params.simulate.step_ms",
                format!(
                    "must be a whole number of milliseconds up to the kind's deadline ({deadline_ms})"
                ),
            ));
        }
    }
    Ok((kind, params))
}

/// `POST /v1/tasks` → 202 with the task and a `Location`; credits reserved, task and run
/// message committed together.
#[utoipa::path(post, path = "/v1/tasks", tag = "tasks", security(("api_key" = [])),
    request_body = SubmitRequest,
    params(("Idempotency-Key" = Option<String>, Header, pattern = "^[\\x21-\\x7E]{1,128}$",
        description = "1 to 128 visible ASCII characters. Same key and body: the same answer (kept at least 24 h); same key, other body: 422")),
    responses(
        (status = 202, description = "Accepted: PENDING, credits reserved; `Location` names the task", body = TaskView),
        crate::api::openapi::Unauthorized,
        (status = 400, description = "Malformed JSON or unknown fields", body = ErrorBody),
        (status = 402, description = "Insufficient credits (`needed`, `balance`)", body = ErrorBody),
        (status = 403, description = "`plan_required`: the caller's plan (`plan`) does not include the kind; `plans` name those that do", body = ErrorBody),
        (status = 422, description = "Invalid field (named in `field`), or `idempotency_key_reused` (the key came with another body)", body = ErrorBody),
        (status = 429, description = "`rate_limited` (submissions per second) or `too_many_tasks_in_flight`; `Retry-After` says when", body = ErrorBody)))]
pub(crate) async fn submit(
    State(state): State<Tasks>,
    AuthUser(user): AuthUser,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(req): ApiJson<SubmitRequest>,
) -> Result<Response, ApiError> {
    let limits = &state.core.limits;
    let standing = limits.standing(&user.id).await;
    limits.take_for(&super::limits::SUBMITS, &standing).await?;
    let (kind, mut params) = validate(&state, &req)?;
    super::entitled::plan_allows(limits.plans(), &standing, kind)?;
    state.shedding.admit(kind)?;
    let metadata = req
        .metadata
        .as_ref()
        .map(super::metadata::check)
        .transpose()
        .map_err(|why| ApiError::invalid("metadata", why))?;
    let cost = state
        .ai
        .kinds
        .get(kind.as_str())
        .map(|k| k.price().reserve(&req.prompt, kind.steps().len()))
        .unwrap_or(0);
    // Last of the checks: it may read the video's length with ffprobe on this machine,
    // which everything cheaper (the credits included) goes before.
    let lane = super::inputs::check(
        &state.core.db,
        &state.core.storage,
        &state.ai,
        &user.id,
        kind,
        &params,
        cost,
    )
    .await?;
    if lane == super::kinds::Lane::Long {
        params[super::kinds::LANE_PARAM] = "long".into();
    }
    let new = NewTask {
        user_id: user.id.clone(),
        tenant_id: standing.tenant_id.clone(),
        plan: standing.plan.clone(),
        kind,
        prompt: req.prompt,
        params,
        cost,
        max_in_flight: limits.value_for(&super::limits::IN_FLIGHT, &standing).await,
        resume: None,
        metadata,
        trace: crate::traces::current(),
    };
    let Some(key) = key else {
        // Without a key, submissions share transactions (group commit); the submitter
        // announces them.
        let body = view_json(state.submitter.submit(new).await.map_err(submit_error)?)?;
        return Ok(with_location(202, body));
    };
    // With one, the stored answer commits in the task's own transaction.
    let max_payload = state.core.broker.max_payload();
    let request = json!({ "kind": kind.as_str(), "prompt": new.prompt, "params": new.params, "metadata": new.metadata });
    let done = idempotency::once(&state.core.db, &user.id, &key, &request, async |txn| {
        let (task, event) = store::submit(txn, &new, max_payload)
            .await
            .map_err(submit_error)?;
        Ok((202, view_json(task)?, event))
    })
    .await?;
    let (status, body) = done.answer();
    let resp = with_location(status, body.clone());
    if let Once::Done { extra: event, .. } = done {
        super::metrics::credits("reserved", new.cost);
        announce(&state.core.relay, &state.core.broker, vec![event]);
    }
    Ok(resp)
}

/// `GET /v1/tasks/{id}`.
#[utoipa::path(get, path = "/v1/tasks/{id}", operation_id = "show_task", tag = "tasks", security(("api_key" = [])),
    params(("id" = String, Path, description = "Task id")),
    responses(
        (status = 200, description = "The task (status, progress, step, attempts, result or error)", body = TaskView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such task of the caller's (admins see every task)", body = ErrorBody)))]
pub(crate) async fn read(
    State(state): State<Tasks>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<axum::Json<TaskView>, ApiError> {
    let task = visible(&state, &user, &id).await?;
    let files =
        crate::storage::records::of_tasks(&state.core.db, std::slice::from_ref(&task.id)).await?;
    let wait = match task.status {
        Status::Waiting => store::waits::get(&state.core.db, &task.id).await?,
        _ => None,
    };
    let line = super::scheduling::line::place(&state.core.db, &task).await?;
    // A step waiting for approval shows what is to be approved: the steps so far.
    let so_far = wait
        .as_ref()
        .filter(|w| w.waiting_for == super::entity::wait::APPROVAL)
        .and(task.result.as_deref())
        .and_then(|r| serde_json::from_str(r).ok());
    let mut view = TaskView::from(task);
    view.files = crate::storage::view::FileView::all(&state.core.storage, files).await?;
    view.waiting = wait.as_ref().map(super::view::WaitingView::of);
    view.line = line;
    if so_far.is_some() {
        view.result = so_far;
    }
    Ok(axum::Json(view))
}

/// `GET /v1/tasks?status=&kind=&since=&until=&metadata=key:value&cursor=&limit=`: the
/// caller's tasks, newest first; `next_cursor` continues.
#[utoipa::path(get, path = "/v1/tasks", tag = "tasks", operation_id = "list_tasks", security(("api_key" = [])),
    params(super::find::FindQuery),
    responses(
        (status = 200, description = "The caller's tasks, newest first", body = crate::api::Page<TaskView>),
        crate::api::openapi::Unauthorized,
        (status = 400, description = "Unknown status or kind, a bad time, metadata term, limit or cursor (named in `field`)", body = ErrorBody)))]
pub(crate) async fn list(
    State(state): State<Tasks>,
    AuthUser(user): AuthUser,
    ApiQuery(q): ApiQuery<super::find::FindQuery>,
) -> Result<axum::Json<crate::api::Page<TaskView>>, ApiError> {
    let mut filter = q.filter(false)?;
    filter.user_id = Some(user.id.clone());
    let limit = crate::api::page::limit(q.limit)?;
    let cursor = crate::api::page::id_cursor(q.cursor.as_deref())?;
    let tasks = store::search(&state.core.db, &filter, cursor, limit, false).await?;
    Ok(axum::Json(super::find::page(tasks, limit)))
}

/// `POST /v1/tasks/{id}/cancel` → CANCELED and refunded, or 409 if already terminal.
#[utoipa::path(post, path = "/v1/tasks/{id}/cancel", tag = "tasks", security(("api_key" = [])),
    params(("id" = String, Path, description = "Task id")),
    responses(
        (status = 200, description = "CANCELED, credits refunded; a running task stops at its next checkpoint", body = TaskView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such task of the caller's", body = ErrorBody),
        (status = 409, description = "Already terminal", body = ErrorBody)))]
pub(crate) async fn cancel(
    State(state): State<Tasks>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<axum::Json<TaskView>, ApiError> {
    let t = visible(&state, &user, &id).await?;
    // An admin canceling someone else's task leaves an audit record.
    let admin = (t.user_id != user.id).then(|| format!("user:{}", user.id));
    match store::cancel(
        &state.core.db,
        &state.events,
        &t.id,
        state.ai.cancel_refund_started_percent,
        admin.as_deref(),
        state.core.broker.topology().max_payload_bytes,
    )
    .await?
    {
        Some((t, ev, _)) => {
            // A parked job's cancel waits in the outbox.
            state.core.relay.notify();
            publish_events(state.core.broker.as_ref(), &[ev]).await;
            Ok(axum::Json(t.into()))
        }
        None => {
            let now = store::get(&state.core.db, &id)
                .await?
                .map_or("gone", |t| t.status.as_str());
            Err(ApiError::conflict(format!(
                "task is already {now}; only PENDING, RETRYING, PROCESSING or WAITING tasks can be canceled"
            )))
        }
    }
}
