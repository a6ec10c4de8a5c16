//! The AI-task flow's queues (consumer group `ai`). Names derive from these keys in
//! [`crate::broker::Topology`]; `[queues.<key>]` in the configuration overrides limits.

use crate::broker::QueueSpec;

pub const AI_SHORT: QueueSpec = QueueSpec {
    key: "ai.short",
    group: "ai",
    default_prefetch: 32,
    default_max_attempts: 5,
    // One step per handler call by default: a batch's messages are acked when its last
    // step ends, so with provider latencies that vary (seconds to a minute) a batch would
    // hold the prefetch slots of its quick steps for its slowest one. For short, even
    // steps (fast models) set `[queues."ai.short"] batch = 16`: claims and results of a
    // batch go in one transaction each, results in waves as they finish. Measured with
    // zero-duration steps (`cargo bench --bench submit`, prefetch 128): batch 1 641
    // tasks/s, batch 16 1,122 tasks/s; 2 batches in flight starved the pipeline.
    default_batch: 1,
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
