//! The per-tenant limit materials declare (`[limits]`, admin overrides per user).

use std::time::Duration;

use crate::limits::{Limit, RateLimit};

/// Material edits and deletes per minute: each is a new version and a search-sync
/// message, so an unbounded loop of PATCHes would flood the sync queue and the index.
pub const WRITES: RateLimit = RateLimit::new(
    "material_write",
    Limit::new(
        "material_writes_per_min",
        120,
        "material edits and deletes per minute (each a new version and a sync message)",
    ),
    Duration::from_secs(60),
);

pub const LIMITS: &[Limit] = &[WRITES.count];
