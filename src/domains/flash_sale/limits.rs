//! The per-tenant limits flash sales declare (`[limits]`, admin overrides per user).

use std::time::Duration;

use crate::limits::{Limit, RateLimit};

/// Orders per second one buyer may place, and the burst above it.
pub const ORDERS: RateLimit = RateLimit::new(
    "order",
    Limit::new(
        "orders_per_sec",
        5,
        "flash-sale orders per second (sustained)",
    ),
    Duration::from_secs(1),
)
.burst(ORDER_BURST);

const ORDER_BURST: Limit = Limit::new(
    "order_burst",
    10,
    "flash-sale orders allowed at once above the sustained rate",
);

pub const LIMITS: &[Limit] = &[ORDERS.count, ORDER_BURST];
