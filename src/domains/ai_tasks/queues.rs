//! The AI-task flow's queues (consumer group `ai`). Names derive from these keys in
//! [`crate::broker::Topology`]; `[queues.<key>]` in the configuration overrides limits.

use std::time::Duration;

use crate::broker::{DelaySpec, QueueSpec};

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
/// The video-analysis pipeline, one queue per stage so each gets the pool it needs
/// (`conveyor consume --queues`): extraction is FFmpeg (CPU-bound, at most
/// `max_concurrent` processes of the `ffmpeg` provider however many are prefetched), ASR
/// and the language-model stages wait on their providers. A video's stages run in
/// order (each message is published when the stage before committed); videos run side by
/// side.
pub const AI_MEDIA_EXTRACT: QueueSpec = QueueSpec::new(
    "ai.media.extract",
    "ai",
    "video analysis: FFmpeg probe, audio and keyframes",
)
.prefetch(4);
/// Videos longer than `ai.kinds.video_analysis.long_video_secs` are extracted and
/// transcribed on queues of their own, so one long video never holds up short ones.
pub const AI_MEDIA_EXTRACT_LONG: QueueSpec = QueueSpec::new(
    "ai.media.extract.long",
    "ai",
    "video analysis of long videos: FFmpeg",
)
.prefetch(1);
pub const AI_MEDIA_ASR_LONG: QueueSpec = QueueSpec::new(
    "ai.media.asr.long",
    "ai",
    "video analysis of long videos: speech to text",
)
.prefetch(2);
pub const AI_MEDIA_ASR: QueueSpec =
    QueueSpec::new("ai.media.asr", "ai", "video analysis: speech to text").prefetch(8);
pub const AI_MEDIA_SUMMARY: QueueSpec =
    QueueSpec::new("ai.media.summary", "ai", "video analysis: summary").prefetch(8);
pub const AI_MEDIA_VECTORIZE: QueueSpec = QueueSpec::new(
    "ai.media.vectorize",
    "ai",
    "video analysis: the knowledge entry",
)
.prefetch(8);

/// Checks of parked provider jobs, provider cancels and approval timeouts: each a
/// quick HTTP call and a few statements, no worker held in between.
pub const AI_CHECK: QueueSpec = QueueSpec::new(
    "ai.check",
    "ai",
    "checks of parked provider jobs (polls, callbacks, cancels)",
)
.prefetch(64);

/// Every queue of the flow, in declaration order.
pub const QUEUES: &[&QueueSpec] = &[
    &AI_SHORT,
    &AI_LONG,
    &AI_MEDIA_EXTRACT,
    &AI_MEDIA_ASR,
    &AI_MEDIA_EXTRACT_LONG,
    &AI_MEDIA_ASR_LONG,
    &AI_MEDIA_SUMMARY,
    &AI_MEDIA_VECTORIZE,
    &AI_CHECK,
];

const fn check_after(key: &'static str, secs: u64) -> DelaySpec {
    DelaySpec {
        key,
        delay: Duration::from_secs(secs),
        target: &AI_CHECK,
        purpose: "the next check of a parked provider job",
    }
}

/// The backoff of a parked job's checks: the first after 2 s, then 5, 15, 30, and every
/// 60 s from then on. Each is a delay queue (`[queues."ai.check.<n>"] delay_ms` moves
/// it); a check message waits in one for free until it is due.
pub const CHECK_DELAYS: &[&DelaySpec] = &[
    &check_after("ai.check.1", 2),
    &check_after("ai.check.2", 5),
    &check_after("ai.check.3", 15),
    &check_after("ai.check.4", 30),
    &check_after("ai.check.5", 60),
];

/// The delay before check number `checks` (0 for the first after parking).
pub fn check_delay(checks: i32) -> &'static DelaySpec {
    let i = usize::try_from(checks).unwrap_or(0);
    CHECK_DELAYS[i.min(CHECK_DELAYS.len() - 1)]
}
