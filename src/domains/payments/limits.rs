//! The per-tenant limits payments declare (`[limits]`, admin overrides per user).

use std::time::Duration;

use crate::limits::{Limit, RateLimit};

/// Payment intents one user may create per minute.
pub const INTENTS: RateLimit = RateLimit {
    action: "payment",
    count: Limit {
        key: "payments_per_min",
        default: 20,
        about: "payment intents created per minute (POST /v1/payments)",
        used: None,
    },
    per: Duration::from_secs(60),
    burst: None,
};

/// Unpaid (CREATED) intents one user may hold; older ones expire (`payments.intent_ttl_secs`).
pub const OPEN: Limit = Limit {
    key: "open_payments",
    default: 20,
    about: "unpaid payment intents held at once (they expire after payments.intent_ttl_secs)",
    used: None,
};

pub const LIMITS: &[Limit] = &[INTENTS.count, OPEN];
