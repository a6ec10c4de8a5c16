//! The AI-task flow's queues (consumer group `ai`). Names derive from these keys in
//! [`crate::broker::Topology`]; `[queues.<key>]` in the configuration overrides limits.

use crate::broker::QueueSpec;

pub const AI_SHORT: QueueSpec = QueueSpec {
    key: "ai.short",
    group: "ai",
    // 128 steps at once per process (four batches of 32): provider calls wait on the
    // network. With zero-duration steps 64 ran ~40 % faster than 32, and 128 with
    // batches of 32 beat 64 with batches of 16 in each of three alternating end-to-end
    // A/B runs (1,879-1,958 against 1,721-1,775 tasks/s, ~5 % less CPU per task).
    default_prefetch: 128,
    default_max_attempts: 5,
    // Up to 32 steps per handler call: their claims go in one transaction and their
    // results in waves as they finish, each message acked as soon as its wave commits
    // (a slow step holds only its own prefetch slot). Measured with zero-duration steps
    // (`cargo bench --bench submit`): see the README's "Batches".
    default_batch: 32,
    default_linger_ms: 2,
    default_in_flight: None,
    purpose: "short AI generation (copywriting, image)",
};
pub const AI_LONG: QueueSpec = QueueSpec {
    key: "ai.long",
    group: "ai",
    default_prefetch: 4,
    default_max_attempts: 3,
    default_batch: 1,
    default_linger_ms: 0,
    default_in_flight: None,
    purpose: "long AI generation (video, 3D)",
};
pub const AI_PIPELINE: QueueSpec = QueueSpec {
    key: "ai.pipeline",
    group: "ai",
    default_prefetch: 8,
    default_max_attempts: 5,
    default_batch: 1,
    default_linger_ms: 0,
    default_in_flight: None,
    purpose: "video-analysis pipeline steps",
};

/// Every queue of the flow, in declaration order.
pub const QUEUES: &[&QueueSpec] = &[&AI_SHORT, &AI_LONG, &AI_PIPELINE];
