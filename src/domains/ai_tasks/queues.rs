//! The AI-task flow's queues (consumer group `ai`). Names derive from these keys in
//! [`crate::broker::Topology`]; `[queues.<key>]` in the configuration overrides limits.

use crate::broker::QueueSpec;

pub const AI_SHORT: QueueSpec = QueueSpec {
    key: "ai.short",
    group: "ai",
    default_prefetch: 32,
    default_max_attempts: 5,
    // Claims and results of up to 8 steps per transaction (see `handler`), 4 batches at
    // once at the default prefetch; a slow step does not hold back a quick one's result.
    // Measured (`cargo bench --bench submit`, prefetch 128): batches of 16-32 with 4-8 in
    // flight ran zero-duration tasks fastest; 2 in flight starved the pipeline.
    default_batch: 8,
    default_linger_ms: 2,
    purpose: "short AI generation (copywriting, image)",
};
pub const AI_LONG: QueueSpec = QueueSpec {
    key: "ai.long",
    group: "ai",
    default_prefetch: 4,
    default_max_attempts: 3,
    default_batch: 1,
    default_linger_ms: 0,
    purpose: "long AI generation (video, 3D)",
};
pub const AI_PIPELINE: QueueSpec = QueueSpec {
    key: "ai.pipeline",
    group: "ai",
    default_prefetch: 8,
    default_max_attempts: 5,
    default_batch: 1,
    default_linger_ms: 0,
    purpose: "video-analysis pipeline steps",
};

/// Every queue of the flow, in declaration order.
pub const QUEUES: &[&QueueSpec] = &[&AI_SHORT, &AI_LONG, &AI_PIPELINE];
