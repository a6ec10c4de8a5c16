//! Platform tables that grow with traffic, trimmed by housekeeping as their owners say:
//! idempotency keys (`crate::idempotency`), published outbox rows and the consumers'
//! processed-message fence and crash-loop counters (the delivery core).

use crate::contract::Feature;
use crate::housekeeping::Retention;
use crate::settings::Settings;

pub const IDEMPOTENCY: Feature =
    Feature::new("idempotency").retention(&[crate::idempotency::RETENTION]);

pub const DELIVERY: Feature = Feature::new("delivery")
    .retention(&[crate::outbox::RETENTION])
    .configured_retention(fences);

/// Kept `consumer.fence_retention_days`.
fn fences(settings: &Settings) -> Vec<Retention> {
    crate::consumer::retention(settings.consumer.fence_retention_days).to_vec()
}
