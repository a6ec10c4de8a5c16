//! The per-tenant limits payments declare (`[limits]`, admin overrides per user).

use std::time::Duration;

use crate::limits::{Limit, RateLimit};

/// Payment intents one user may create per minute.
pub const INTENTS: RateLimit = RateLimit::new(
    "payment",
    Limit::new(
        "payments_per_min",
        20,
        "payment intents created per minute (POST /v1/payments)",
    ),
    Duration::from_secs(60),
);

/// Unpaid (CREATED) intents one user may hold; older ones expire (`payments.intent_ttl_secs`).
pub const OPEN: Limit = Limit::new(
    "open_payments",
    20,
    "unpaid payment intents held at once (they expire after payments.intent_ttl_secs)",
);

pub const LIMITS: &[Limit] = &[INTENTS.count, OPEN];
