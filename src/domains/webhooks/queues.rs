//! The webhooks' queue (consumer group `webhooks`) and the delays between a delivery's
//! attempts.

use std::time::Duration;

use crate::broker::{DelaySpec, QueueSpec};

/// One delivery per message. Attempts wait on the network (a customer's server): many
/// at once, each endpoint capped ([`super::settings::WebhookSettings`]).
pub const WEBHOOKS_DELIVER: QueueSpec = QueueSpec::new(
    "webhooks.deliver",
    "webhooks",
    "signed deliveries of events to tenants' webhook endpoints",
)
.prefetch(128);

pub const QUEUES: &[&QueueSpec] = &[&WEBHOOKS_DELIVER];

const fn retry_after(key: &'static str, secs: u64) -> DelaySpec {
    DelaySpec {
        key,
        delay: Duration::from_secs(secs),
        target: &WEBHOOKS_DELIVER,
        purpose: "the next attempt of a webhook delivery that failed",
    }
}

/// The backoff between attempts: 5 s, 30 s, 2 min, 10 min, 1 h, then hourly until the
/// delivery gives up (`webhooks.give_up_after_secs`, 3 days). Each is a delay queue
/// (`[queues."webhooks.retry.<n>"] delay_ms` moves it; the tests shorten them).
pub const RETRY_DELAYS: &[&DelaySpec] = &[
    &retry_after("webhooks.retry.1", 5),
    &retry_after("webhooks.retry.2", 30),
    &retry_after("webhooks.retry.3", 120),
    &retry_after("webhooks.retry.4", 600),
    &retry_after("webhooks.retry.5", 3600),
];

/// The delay after failed attempt number `attempts` (1-based).
pub fn retry_delay(attempts: i32) -> &'static DelaySpec {
    let i = usize::try_from(attempts.max(1) - 1).unwrap_or(0);
    RETRY_DELAYS[i.min(RETRY_DELAYS.len() - 1)]
}
