//! The search-sync queue (consumer group `search`).

use crate::broker::QueueSpec;

/// Many attempts on purpose: a backend outage sends batches round the retry tiers
/// (staying on the longest, 10 minutes by default), and nothing should be dead-lettered
/// merely because the backend was away: 200 attempts ride out about 32 hours at the
/// default tiers. A document the engine rejects for good is dead-lettered at once.
pub const SEARCH_SYNC: QueueSpec = QueueSpec::new(
    "search.sync",
    "search",
    "sync changed materials into the search index, in bulk",
)
.prefetch(1000)
.max_attempts(200)
.batch(500, 20)
.in_flight(2);

pub const QUEUES: &[&QueueSpec] = &[&SEARCH_SYNC];
