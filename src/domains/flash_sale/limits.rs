//! The per-tenant limits flash sales declare (`[limits]`, admin overrides per user).

use std::time::Duration;

use crate::limits::{Limit, RateLimit};

/// Orders per second one buyer may place, and the burst above it.
pub const ORDERS: RateLimit = RateLimit {
    action: "order",
    count: Limit {
        key: "orders_per_sec",
        default: 5,
        about: "flash-sale orders per second (sustained)",
        used: None,
    },
    per: Duration::from_secs(1),
    burst: Some(ORDER_BURST),
};

const ORDER_BURST: Limit = Limit {
    key: "order_burst",
    default: 10,
    about: "flash-sale orders allowed at once above the sustained rate",
    used: None,
};

pub const LIMITS: &[Limit] = &[ORDERS.count, ORDER_BURST];
