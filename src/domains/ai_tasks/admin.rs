//! Operators' tasks: every tenant's tasks found by the same filter an owner's list takes
//! (plus the tenant), and a bulk retry or cancel by that filter — counted first with a
//! dry run, then acted on in slices at `ai.bulk_per_second`, each task audited ("retry
//! everything that failed for tenant X between 14:00 and 15:00 after the provider
//! outage").

use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::find::FindQuery;
use super::kinds::Status;
use super::messages::publish_events;
use super::state::Tasks;
use super::store::{self, Retried};
use super::submitter::announce;
use super::view::TaskView;
use crate::api::openapi::ErrorBody;
use crate::api::{Admin, ApiJson, ApiQuery};
use crate::error::ApiError;

/// `GET /v1/admin/tasks?user_id=&status=&kind=&since=&until=&metadata=&cursor=&limit=`.
#[utoipa::path(get, path = "/v1/admin/tasks", tag = "admin", operation_id = "find_tasks",
    security(("api_key" = [])), params(FindQuery),
    responses(
        (status = 200, description = "Every tenant's tasks matching the filter, newest first, with their tenant", body = crate::api::Page<TenantTask>),
        (status = 400, description = "A bad filter, limit or cursor (named in `field`)", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin))]
pub(crate) async fn find(
    State(state): State<Tasks>,
    _: Admin,
    ApiQuery(q): ApiQuery<FindQuery>,
) -> Result<axum::Json<crate::api::Page<TenantTask>>, ApiError> {
    let filter = q.filter(true)?;
    let limit = crate::api::page::limit(q.limit)?;
    let cursor = crate::api::page::id_cursor(q.cursor.as_deref())?;
    let tasks = store::search(&state.core.db, &filter, cursor, limit, false).await?;
    let items: Vec<TenantTask> = tasks
        .into_iter()
        .map(|t| TenantTask {
            user_id: t.user_id.clone(),
            task: t.into(),
        })
        .collect();
    Ok(axum::Json(crate::api::Page::new(items, limit, |t| {
        t.task.id.clone()
    })))
}

/// A task as operators see it: the tenant's view, and whose it is.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TenantTask {
    #[serde(flatten)]
    pub task: TaskView,
    /// The tenant (user id) the task belongs to.
    pub user_id: String,
}

/// A bulk action by filter.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkRequest {
    /// `retry` (FAILED tasks by default; each is retried once) or `cancel` (PENDING,
    /// RETRYING, PROCESSING and WAITING ones by default).
    #[schema(pattern = "^(retry|cancel)$")]
    pub action: String,
    /// Which tasks (`cursor` and `limit` are ignored here).
    #[serde(default)]
    pub filter: FindQuery,
    /// Count only.
    #[serde(default)]
    pub dry_run: bool,
    /// Tasks acted on by this call, 1 to 100 (default 50): repeat while `remaining` > 0.
    #[schema(minimum = 1, maximum = 100)]
    pub limit: Option<u64>,
}

/// What one task came to.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BulkItem {
    pub id: String,
    /// `retried`, `retried_before`, `canceled` or `skipped` (ended meanwhile, or refused).
    pub outcome: String,
    /// The retry's task id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_id: Option<String>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BulkAnswer {
    pub action: String,
    /// Tasks the filter matched before this call.
    pub matched: u64,
    pub done: Vec<BulkItem>,
    /// Tasks still matching after it.
    pub remaining: u64,
}

/// `POST /v1/admin/tasks/bulk`: a dry run counts; a run acts on a slice, paced.
#[utoipa::path(post, path = "/v1/admin/tasks/bulk", tag = "admin", operation_id = "bulk_tasks",
    security(("api_key" = [])), request_body = BulkRequest,
    responses(
        (status = 200, description = "What the filter matched and what this call did", body = BulkAnswer),
        (status = 400, description = "Not JSON, unknown fields, or a bad filter (named in `field`)", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 422, description = "An unknown action or a bad limit (named in `field`)", body = ErrorBody)))]
pub(crate) async fn bulk(
    State(state): State<Tasks>,
    Admin(admin): Admin,
    ApiJson(req): ApiJson<BulkRequest>,
) -> Result<axum::Json<BulkAnswer>, ApiError> {
    let retry = match req.action.as_str() {
        "retry" => true,
        "cancel" => false,
        other => {
            return Err(ApiError::invalid(
                "action",
                format!("`{other}` is not retry or cancel"),
            ));
        }
    };
    let limit = req.limit.unwrap_or(50);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::invalid("limit", "1 to 100"));
    }
    // Ignored here, but held to the rules the document states for them.
    crate::api::page::limit(req.filter.limit)?;
    crate::api::page::id_cursor(req.filter.cursor.as_deref())?;
    let mut filter = req.filter.filter(true)?;
    if filter.statuses.is_empty() {
        filter.statuses = if retry {
            vec![Status::Failed]
        } else {
            Status::ACTIVE.to_vec()
        };
    }
    filter.not_retried = retry;
    let db = &state.core.db;
    let matched = store::count(db, &filter).await?;
    let mut done = Vec::new();
    if !req.dry_run {
        let actor = format!("user:{}", admin.id);
        let pace = crate::dead_letters::operate::replay_limiter(state.ai.bulk_per_second);
        for t in store::search(db, &filter, None, limit, true).await? {
            pace.until_ready().await;
            done.push(if retry {
                retry_one(&state, &actor, t).await?
            } else {
                cancel_one(&state, &actor, t).await?
            });
        }
    }
    let remaining = store::count(db, &filter).await?;
    Ok(axum::Json(BulkAnswer {
        action: req.action,
        matched,
        done,
        remaining,
    }))
}

async fn retry_one(state: &Tasks, actor: &str, t: store::Task) -> Result<BulkItem, ApiError> {
    let limits = &state.core.limits;
    let standing = limits.standing(&t.user_id).await;
    let cap = limits.value_for(&super::limits::IN_FLIGHT, &standing).await;
    let max_payload = state.core.broker.max_payload();
    let (outcome, retry_id) =
        match store::retry(&state.core.db, &t, &standing, cap, max_payload).await {
            Ok(Retried::Made(task, event)) => {
                announce(&state.core.relay, &state.core.broker, vec![event]);
                ("retried", Some(task.id))
            }
            Ok(Retried::Before(task)) => ("retried_before", Some(task.id)),
            Ok(Retried::Refused(_)) => ("skipped", None),
            // The tenant's credits or cap: that task is left, the rest go on.
            Err(
                store::StoreError::InsufficientCredits { .. }
                | store::StoreError::TooManyInFlight { .. },
            ) => ("skipped", None),
            Err(e) => return Err(super::answers::submit_error(e)),
        };
    if outcome == "retried" {
        crate::users::audit::record(
            &state.core.db,
            actor,
            "task.bulk_retry",
            &t.id,
            serde_json::json!({ "retry_id": retry_id }),
        )
        .await?;
    }
    Ok(BulkItem {
        id: t.id,
        outcome: outcome.into(),
        retry_id,
    })
}

async fn cancel_one(state: &Tasks, actor: &str, t: store::Task) -> Result<BulkItem, ApiError> {
    let canceled = store::cancel(
        &state.core.db,
        &state.events,
        &t.id,
        state.ai.cancel_refund_started_percent,
        Some(actor),
        state.core.broker.topology().max_payload_bytes,
    )
    .await?;
    let outcome = match canceled {
        Some((_, ev, _)) => {
            state.core.relay.notify();
            publish_events(state.core.broker.as_ref(), &[ev]).await;
            "canceled"
        }
        None => "skipped",
    };
    Ok(BulkItem {
        id: t.id,
        outcome: outcome.into(),
        retry_id: None,
    })
}
