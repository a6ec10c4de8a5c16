//! The payments flow's queue (consumer group `payments`).

use crate::broker::QueueSpec;

pub const PAYMENTS_APPLY: QueueSpec = QueueSpec {
    key: "payments.apply",
    group: "payments",
    default_prefetch: 32,
    default_max_attempts: 8,
    default_batch: 1,
    default_linger_ms: 0,
    default_in_flight: None,
    purpose: "apply verified payment events (grant credits) exactly once",
};

pub const QUEUES: &[&QueueSpec] = &[&PAYMENTS_APPLY];

/// Envelope kind of an apply message: `{"event": <inbox row id>}`.
pub const APPLY_EVENT: &str = "payments.event.apply";
