//! The events AI tasks record through the event seam (`crate::events`), declared in the
//! registry by [`DOMAIN`](super::DOMAIN): a task's final state (public: tenants' webhook
//! endpoints subscribe to them) and a successful task's output (internal: what it leaves
//! for whoever keeps it; search sync makes a material of it). Recorded in the
//! transaction of the transition ([`notify`](super::notify), the step commit).

use crate::events::EventType;
use crate::search::semantic::Embedded;

pub const SUCCEEDED: EventType =
    EventType::new("task.succeeded", "a task finished with its result");
pub const FAILED: EventType = EventType::new(
    "task.failed",
    "a task failed for good (a permanent error, or its retries spent)",
);
pub const CANCELED: EventType = EventType::new(
    "task.canceled",
    "a task was canceled (by its owner, an admin, a deadline or a rejected approval)",
);
pub const OUTPUT: EventType = EventType::internal(
    "task.output",
    "a successful task's output (detail: [`Output`]), recorded with its last step",
);

/// The event types AI tasks record.
pub const EVENTS: &[&EventType] = &[&SUCCEEDED, &FAILED, &CANCELED, &OUTPUT];

/// The detail of an [`OUTPUT`] event: what a successful task produced.
#[derive(Debug, Clone)]
pub struct Output {
    pub task_id: String,
    /// The task's kind (`copywriting`).
    pub kind: String,
    /// What the tenant asked for (a title derives from it).
    pub prompt: String,
    /// The text for text kinds, the result's JSON otherwise.
    pub content: String,
    /// What it is found by in a search by meaning (a video's summary and transcript).
    pub vectors: Option<Embedded>,
}
