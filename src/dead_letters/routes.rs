//! The admin API over dead letters: list, inspect, replay, discard. Admins only
//! (`users create --admin`); any other caller gets 403.
//!
//! - `GET  /v1/admin/dead-letters?queue=&status=&reason=&cursor=&limit=`
//! - `GET  /v1/admin/dead-letters/{id}` (with body, history and audit trail)
//! - `POST /v1/admin/dead-letters/{id}/replay` (429 above `dead_letters.replay_per_second`)
//! - `POST /v1/admin/dead-letters/{id}/discard`
//! - `POST /v1/admin/dead-letters/replay` (by filter: a dry run counts, a run replays a
//!   slice at the replay pace and says how many remain)

use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRef, Path, State};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::settings::DeadLetterSettings;
use super::{Action, DeadLetter, Filter, OperateError, Operated, Status};
use crate::api::openapi::ErrorBody;
use crate::api::{Admin, ApiQuery, Core};
use crate::error::ApiError;

/// The routes' state: the core and the replay pace shared by every admin request.
#[derive(Clone, FromRef)]
pub struct DeadLetters {
    pub core: Core,
    pub replay_limiter: Arc<super::operate::ReplayLimiter>,
}

impl DeadLetters {
    pub fn new(core: Core, settings: &DeadLetterSettings) -> Self {
        let per_second = settings.replay_per_second;
        DeadLetters {
            core,
            replay_limiter: Arc::new(super::operate::replay_limiter(per_second)),
        }
    }
}

pub fn routes(state: DeadLetters) -> Router {
    Router::new()
        .route("/v1/admin/dead-letters", get(list))
        .route("/v1/admin/dead-letters/{id}", get(show))
        .route("/v1/admin/dead-letters/{id}/replay", post(replay))
        .route("/v1/admin/dead-letters/{id}/discard", post(discard))
        .route("/v1/admin/dead-letters/replay", post(replay_filter))
        .with_state(state)
}

/// The routes' OpenAPI entries.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list, show, replay, discard, replay_filter),
    components(schemas(super::Status))
)]
pub struct Doc;

/// What operators see of a dead letter; `body` and `actions` only in the detail view.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeadLetterView {
    pub id: i64,
    pub message_id: String,
    pub queue: String,
    pub kind: String,
    pub reason: String,
    pub status: String,
    pub attempts: i32,
    pub last_error: String,
    pub history: Value,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<ActionView>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ActionView {
    pub action: String,
    pub actor: String,
    pub at: chrono::DateTime<chrono::Utc>,
}

impl From<DeadLetter> for DeadLetterView {
    fn from(d: DeadLetter) -> Self {
        DeadLetterView {
            history: serde_json::from_str(&d.history).unwrap_or_else(|_| json!([])),
            id: d.id,
            message_id: d.message_id,
            queue: d.queue,
            kind: d.kind,
            reason: d.reason,
            status: d.status,
            attempts: d.attempts,
            last_error: d.last_error,
            created_at: d.created_at,
            updated_at: d.updated_at,
            body: None,
            actions: None,
        }
    }
}

impl From<Action> for ActionView {
    fn from(a: Action) -> Self {
        ActionView {
            action: a.action,
            actor: a.actor,
            at: a.at,
        }
    }
}

/// Ids are numbers; anything else names no dead letter.
fn parse_id(id: &str) -> Result<i64, ApiError> {
    id.parse().map_err(|_| ApiError::NotFound("dead letter"))
}

fn operate_error(e: OperateError) -> ApiError {
    match e {
        OperateError::NotFound(_) => ApiError::NotFound("dead letter"),
        OperateError::Conflict { .. } | OperateError::NotReplayable { .. } => {
            ApiError::Conflict(e.to_string())
        }
        OperateError::Db(e) => e.into(),
    }
}

/// The answer to a replay or discard.
#[derive(Debug, Serialize, ToSchema)]
pub struct OperatedView {
    pub dead_letter: DeadLetterView,
    /// It had been done before: nothing happened this time.
    pub already: bool,
}

fn operated(o: Operated) -> axum::Json<OperatedView> {
    axum::Json(OperatedView {
        dead_letter: o.dead_letter.into(),
        already: o.already,
    })
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// A queue key (`ai.short`, …).
    queue: Option<String>,
    #[param(value_type = Option<Status>)]
    status: Option<String>,
    /// malformed, permanent, exhausted or crash_loop.
    reason: Option<String>,
    /// The message kind (`ai.task.run`, …).
    kind: Option<String>,
    /// Only letters that died (last) at or after this time (RFC 3339).
    #[param(value_type = Option<String>, format = DateTime)]
    since: Option<String>,
    /// `next_cursor` of the previous page.
    #[param(pattern = "^[0-9]{1,18}$")]
    cursor: Option<String>,
    /// Page size, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u64>,
}

#[utoipa::path(get, path = "/v1/admin/dead-letters", tag = "admin", operation_id = "list_dead_letters",
    security(("api_key" = [])), params(ListQuery),
    responses(
        (status = 200, description = "Dead letters, newest first", body = crate::api::Page<DeadLetterView>),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 400, description = "Bad filter, limit or cursor (named in `field`)", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody)))]
pub(crate) async fn list(
    State(state): State<Core>,
    _: Admin,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<axum::Json<crate::api::Page<DeadLetterView>>, ApiError> {
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(Status::parse(s).ok_or_else(|| {
            ApiError::bad_request(
                "status",
                format!("unknown status `{s}`; expected {}", Status::names()),
            )
        })?),
    };
    let limit = crate::api::page::limit(q.limit)?;
    let before = match q.cursor.as_deref() {
        None => None,
        Some(c) => Some(
            c.parse::<i64>()
                .map_err(|_| ApiError::bad_request("cursor", "is not a cursor this API issued"))?,
        ),
    };
    let since = match q.since.as_deref() {
        None => None,
        Some(t) => Some(
            chrono::DateTime::parse_from_rfc3339(t)
                .map_err(|_| ApiError::bad_request("since", "must be an RFC 3339 time"))?
                .with_timezone(&chrono::Utc),
        ),
    };
    let filter = Filter {
        queue: q.queue.as_deref(),
        status,
        reason: q.reason.as_deref(),
        kind: q.kind.as_deref(),
        since,
    };
    let rows = super::search(&state.db, &filter, before, limit).await?;
    let items: Vec<DeadLetterView> = rows.into_iter().map(DeadLetterView::from).collect();
    Ok(axum::Json(crate::api::Page::new(items, limit, |d| {
        d.id.to_string()
    })))
}

#[utoipa::path(get, path = "/v1/admin/dead-letters/{id}", tag = "admin", operation_id = "show_dead_letter",
    security(("api_key" = [])), params(("id" = i64, Path, description = "Dead letter id")),
    responses(
        (status = 200, description = "The dead letter with its body (the envelope as it died) and audit trail", body = DeadLetterView),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 404, description = "No such dead letter", body = ErrorBody)))]
pub(crate) async fn show(
    State(state): State<Core>,
    _: Admin,
    Path(id): Path<String>,
) -> Result<axum::Json<DeadLetterView>, ApiError> {
    let id = parse_id(&id)?;
    let row = super::get(&state.db, id)
        .await?
        .ok_or(ApiError::NotFound("dead letter"))?;
    let body = serde_json::from_str(&row.body).unwrap_or_else(|_| Value::String(row.body.clone()));
    let actions = super::actions(&state.db, id).await?;
    let mut view = DeadLetterView::from(row);
    view.body = Some(body);
    view.actions = Some(actions.into_iter().map(ActionView::from).collect());
    Ok(axum::Json(view))
}

#[utoipa::path(post, path = "/v1/admin/dead-letters/{id}/replay", tag = "admin", operation_id = "replay_dead_letter",
    security(("api_key" = [])), params(("id" = i64, Path, description = "Dead letter id")),
    responses(
        (status = 200, description = "Sent back to its origin queue (same message id, fresh attempts), or `already` replayed", body = OperatedView),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
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
        return Err(ApiError::TooManyRequests {
            code: "rate_limited",
            message: format!(
                "replays are paced at dead_letters.replay_per_second; retry in {} ms",
                wait.as_millis()
            ),
            retry_after_secs: wait.as_secs().max(1),
        });
    }
    let done = super::replay(
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
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 404, description = "No such dead letter", body = ErrorBody),
        (status = 409, description = "Already replayed", body = ErrorBody)))]
pub(crate) async fn discard(
    State(state): State<Core>,
    Admin(user): Admin,
    Path(id): Path<String>,
) -> Result<axum::Json<OperatedView>, ApiError> {
    let id = parse_id(&id)?;
    super::discard(&state.db, id, &format!("user:{}", user.id))
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
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
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
    let plan = super::replay_plan(&state.db, &f.queue, f.reason.as_deref(), f.force).await?;
    let matched = plan.ids.len();
    let mut replayed = Vec::new();
    if !f.dry_run {
        let actor = format!("user:{}", user.id);
        for id in plan.ids.iter().take(limit as usize) {
            // Paced like single replays, waiting rather than refusing: the caller asked
            // for this slice.
            replay_limiter.until_ready().await;
            let done =
                super::replay(&state.db, topology, *id, &actor, state.broker.max_payload()).await;
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
