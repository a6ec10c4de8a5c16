//! The per-tenant limits webhooks declare (`[limits]`, plans, admin overrides).

use std::time::Duration;

use crate::limits::{Limit, RateLimit};

/// Deliveries a tenant asks for by hand (test events and manual retries) per minute:
/// each is a request to the tenant's server made by conveyor, so an unbounded loop of
/// them would make conveyor a traffic source aimed wherever the endpoint points.
pub const SENDS: RateLimit = RateLimit::new(
    "webhook_send",
    Limit::new(
        "webhook_sends_per_min",
        30,
        "webhook test events and manual delivery retries per minute",
    ),
    Duration::from_secs(60),
);

pub const LIMITS: &[Limit] = &[SENDS.count];
