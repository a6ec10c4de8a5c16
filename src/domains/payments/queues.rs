//! The payments flow's queue (consumer group `payments`).

use crate::broker::QueueSpec;

pub const PAYMENTS_APPLY: QueueSpec = QueueSpec::new(
    "payments.apply",
    "payments",
    "apply verified payment events (grant credits) exactly once",
)
.prefetch(64)
.batch(32, 2)
.max_attempts(8);

pub const QUEUES: &[&QueueSpec] = &[&PAYMENTS_APPLY];
