//! The canary's one queue (consumer group `canary`).

use crate::broker::QueueSpec;

pub const CANARY_PING: QueueSpec = QueueSpec::new(
    "canary.ping",
    "canary",
    "synthetic round trips: outbox, relay, broker, consumer, database",
);

pub const QUEUES: &[&QueueSpec] = &[&CANARY_PING];
