//! The wire contract of the AI-task flow.

use serde::{Deserialize, Serialize};

use crate::broker::Broker;

/// The live stream kind of task events: `{"op":"subscribe","stream":"task","id":…}`.
pub const STREAM: &str = "task";

/// Envelope kind of [`RunStep`].
pub const RUN_STEP: &str = "ai.task.run";

/// Run step `step` of task `task_id` (0 for single-step kinds).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RunStep {
    pub task_id: String,
    #[serde(default)]
    pub step: i32,
}

/// Envelope kind of [`CheckStep`].
pub const CHECK_STEP: &str = "ai.task.check";

/// Check the parked step of task `task_id`: valid only while the task waits with this
/// attempt and this many checks done (a later check, a callback's, or the task's end
/// makes it stale, and it changes nothing).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CheckStep {
    pub task_id: String,
    pub attempt: i32,
    pub checks: i32,
}

/// Envelope kind of [`CancelJob`].
pub const CANCEL_JOB: &str = "ai.task.cancel_job";

/// Ask `provider` to stop the job `handle` (the task was canceled or ran out of time).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CancelJob {
    pub task_id: String,
    pub provider: String,
    pub handle: String,
}

/// A progress or status event, as stored and as pushed to subscribers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TaskEvent {
    pub task_id: String,
    pub user_id: String,
    pub seq: i32,
    pub status: super::kinds::Status,
    pub progress: i32,
    pub step: Option<String>,
    pub message: Option<String>,
    pub at: chrono::DateTime<chrono::Utc>,
    /// What the event is: progress (the default, omitted), a piece of streamed text, or
    /// a reset (discard the text of earlier attempts).
    #[serde(default, skip_serializing_if = "EventKind::is_progress")]
    pub kind: EventKind,
    /// The piece of text of a `delta` event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
}

/// What a task event is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// Status, progress, step, message.
    #[default]
    Progress,
    /// A piece of the text being generated, in order; the pieces of one attempt, joined,
    /// are its text so far.
    Delta,
    /// The text streamed so far belongs to a failed attempt: discard it (the retry's
    /// pieces follow).
    Reset,
}

impl EventKind {
    pub fn is_progress(&self) -> bool {
        *self == EventKind::Progress
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Progress => "progress",
            EventKind::Delta => "delta",
            EventKind::Reset => "reset",
        }
    }

    pub fn parse(s: &str) -> EventKind {
        match s {
            "delta" => EventKind::Delta,
            "reset" => EventKind::Reset,
            _ => EventKind::Progress,
        }
    }
}

impl TaskEvent {
    /// A stored event as it is pushed (stored rows do not repeat the owner).
    pub fn from_stored(e: &super::entity::event::Model, user_id: &str) -> Self {
        TaskEvent {
            task_id: e.task_id.clone(),
            user_id: user_id.to_owned(),
            seq: e.seq,
            status: e.status,
            progress: e.progress,
            step: e.step.clone(),
            message: e.message.clone(),
            at: e.created_at,
            kind: EventKind::parse(&e.kind),
            delta: e.delta.clone(),
        }
    }
}

impl TaskEvent {
    /// The event as the `task` live stream carries it.
    pub fn live(&self) -> crate::live::Event {
        let mut data = serde_json::json!({
            "task_id": self.task_id,
            "status": self.status,
            "progress": self.progress,
            "step": self.step,
            "message": self.message,
            "at": self.at,
        });
        if !self.kind.is_progress() {
            data["kind"] = self.kind.as_str().into();
            data["delta"] = self.delta.clone().unwrap_or_default().into();
        }
        let seq = i64::from(self.seq);
        crate::live::Event::new(STREAM, &self.task_id, &self.user_id, seq, data)
            .terminal(self.status.is_terminal())
            .keep(!self.kind.is_progress())
    }
}

/// Publishes events after their transaction committed; best effort (they are stored).
pub async fn publish_events(broker: &dyn Broker, events: &[TaskEvent]) {
    let live: Vec<_> = events.iter().map(TaskEvent::live).collect();
    crate::live::publish(broker, &live).await;
}
