//! The AI-task flow's queues (consumer group `ai`). Names derive from these keys in
//! [`crate::broker::Topology`]; `[queues.<key>]` in the configuration overrides limits.

use crate::broker::QueueSpec;

/// 128 steps at once per process (four batches of 32): provider calls wait on the
/// network. With zero-duration steps 64 ran ~40 % faster than 32, and 128 with batches
/// of 32 beat 64 with batches of 16 in each of three alternating end-to-end A/B runs
/// (1,879-1,958 against 1,721-1,775 tasks/s, ~5 % less CPU per task). Up to 32 steps per
/// handler call: their claims go in one transaction and their results in waves as they
/// finish, each message acked as soon as its wave commits (a slow step holds only its
/// own prefetch slot). Measured with zero-duration steps (`cargo bench --bench submit`):
/// see docs/performance.md.
pub const AI_SHORT: QueueSpec =
    QueueSpec::new("ai.short", "ai", "short AI generation (copywriting, image)")
        .prefetch(128)
        .batch(32, 2);
pub const AI_LONG: QueueSpec = QueueSpec::new("ai.long", "ai", "long AI generation (video, 3D)")
    .prefetch(4)
    .max_attempts(3);
pub const AI_PIPELINE: QueueSpec =
    QueueSpec::new("ai.pipeline", "ai", "video-analysis pipeline steps").prefetch(8);

/// Every queue of the flow, in declaration order.
pub const QUEUES: &[&QueueSpec] = &[&AI_SHORT, &AI_LONG, &AI_PIPELINE];
