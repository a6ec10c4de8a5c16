//! What clients see of a task, over REST and in live snapshots.

use serde::Serialize;
use serde_json::Value;

use super::entity::task::Model as Task;
use super::entity::wait::{APPROVAL, Model as Wait};
use super::kinds::{Status, TaskKind};

/// What clients see of a task.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TaskView {
    pub id: String,
    pub kind: TaskKind,
    pub status: Status,
    pub progress: i32,
    pub step: Option<String>,
    pub attempts: i32,
    pub cost: i64,
    pub prompt: String,
    pub result: Option<Value>,
    pub error: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
    pub started_at: Option<chrono::DateTime<chrono::Utc>>,
    pub finished_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The plan it was submitted under: its weight in a contended lane.
    pub plan: String,
    /// The distributed trace of its run (when the server exports traces): look it up in
    /// the trace backend for where its time went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The files it generated, with download URLs that expire; filled by
    /// `GET /v1/tasks/{id}`, absent elsewhere.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<crate::storage::view::FileView>,
    /// The client's metadata, as submitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// The task this one retries (`POST /v1/tasks/{id}/retry`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<String>,
    /// What a `WAITING` task waits for; filled by `GET /v1/tasks/{id}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<WaitingView>,
    /// A `PENDING` task's place in line and estimated start; filled by
    /// `GET /v1/tasks/{id}` and a live stream's snapshot, refreshed on the stream while it
    /// waits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<PlaceView>,
}

/// What a `WAITING` task waits for.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WaitingView {
    /// `provider` (its job runs there) or `approval` (a person's decision).
    #[serde(rename = "for")]
    pub waiting_for: String,
    /// The `[ai.providers]` name running the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    pub since: chrono::DateTime<chrono::Utc>,
    /// When the wait gives up: the job is canceled and the task fails, or the approval
    /// is rejected.
    pub deadline_at: chrono::DateTime<chrono::Utc>,
    /// The one-time link that decides an approval (`POST` it with `{"decision"}`): hand
    /// it to a reviewer. Only the task's owner and admins see it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_link: Option<String>,
}

/// Where a PENDING task stands.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PlaceView {
    /// The line it waits in (the queue of its first step).
    pub lane: String,
    /// Tasks of its tenant in the lane submitted before it and not started: it starts
    /// after them (0: it is next).
    pub position: u64,
    /// Tasks of every tenant waiting ahead of it in the lane (the fair share serves
    /// tenants side by side, so it may start before many of them).
    pub waiting_ahead: u64,
    /// When it should start: `position + 1` tasks at the pace its tenant's work in the
    /// lane started over the last minute (the lane's, if the tenant's has not started
    /// twice); `null` when nothing started there lately.
    pub estimated_start_at: Option<chrono::DateTime<chrono::Utc>>,
    pub estimated_wait_ms: Option<u64>,
}

impl WaitingView {
    pub fn of(w: &Wait) -> Self {
        let approval = w.waiting_for == APPROVAL;
        WaitingView {
            waiting_for: w.waiting_for.clone(),
            provider: (!approval).then(|| w.provider.clone()),
            since: w.parked_at,
            deadline_at: w.deadline_at,
            approval_link: approval.then(|| format!("/v1/approvals/{}.{}", w.task_id, w.token)),
        }
    }
}

impl From<Task> for TaskView {
    fn from(t: Task) -> Self {
        let done = t.status == Status::Success;
        TaskView {
            result: if done {
                t.result
                    .as_deref()
                    .and_then(|r| serde_json::from_str(r).ok())
            } else {
                None
            },
            id: t.id,
            kind: t.kind,
            status: t.status,
            progress: t.progress,
            step: t.step,
            attempts: t.attempt,
            cost: t.cost,
            prompt: t.prompt,
            error: t.error,
            created_at: t.created_at,
            updated_at: t.updated_at,
            started_at: t.started_at,
            finished_at: t.finished_at,
            files: Vec::new(),
            plan: t.plan,
            trace_id: t.trace_id,
            retry_of: t.retry_of,
            metadata: t
                .metadata
                .as_deref()
                .and_then(|m| serde_json::from_str(m).ok()),
            waiting: None,
            line: None,
        }
    }
}
