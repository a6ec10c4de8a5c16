//! The search-sync queue (consumer group `search`).

use crate::broker::QueueSpec;

/// Many attempts on purpose: a backend outage sends batches round the retry tiers
/// (staying on the longest, 10 minutes by default), and nothing should be dead-lettered
/// merely because the backend was away: 200 attempts ride out about 32 hours at the
/// default tiers. A document the engine rejects for good is dead-lettered at once.
pub const SEARCH_SYNC: QueueSpec = QueueSpec {
    key: "search.sync",
    group: "search",
    default_prefetch: 1000,
    default_max_attempts: 200,
    default_batch: 500,
    default_linger_ms: 20,
    default_in_flight: Some(2),
    purpose: "sync changed materials into the search index, in bulk",
};

pub const QUEUES: &[&QueueSpec] = &[&SEARCH_SYNC];
