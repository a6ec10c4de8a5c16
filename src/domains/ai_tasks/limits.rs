//! The per-tenant limits AI tasks declare (`[limits]`, admin overrides per user).

use std::time::Duration;

use crate::limits::{Limit, RateLimit};

/// Task submissions per second, and the burst above it.
pub const SUBMITS: RateLimit = RateLimit::new(
    "submit",
    Limit::new(
        "submits_per_sec",
        20,
        "task submissions per second (sustained)",
    ),
    Duration::from_secs(1),
)
.burst(SUBMIT_BURST);

const SUBMIT_BURST: Limit = Limit::new(
    "submit_burst",
    40,
    "task submissions allowed at once above the sustained rate",
);

/// Tasks PENDING, PROCESSING or RETRYING at once, checked in the submission's transaction.
pub const IN_FLIGHT: Limit = Limit::new(
    "tasks_in_flight",
    200,
    "tasks pending, processing or retrying at once",
)
.used(in_flight);

/// Tasks PROCESSING at once: fair share at claim time (more wait their turn).
pub const RUNNING: Limit = Limit::new(
    "tasks_running",
    8,
    "tasks processing at once in one lane (fair share at claim time; more are deferred)",
)
.used(running);

fn in_flight<'a>(
    db: &'a sea_orm::DatabaseConnection,
    tenant: &'a str,
) -> futures::future::BoxFuture<'a, Result<u64, sea_orm::DbErr>> {
    Box::pin(super::store::count_of_tenant(
        db,
        tenant,
        &super::kinds::Status::ACTIVE,
    ))
}

fn running<'a>(
    db: &'a sea_orm::DatabaseConnection,
    tenant: &'a str,
) -> futures::future::BoxFuture<'a, Result<u64, sea_orm::DbErr>> {
    Box::pin(super::store::running_in_busiest_lane(db, tenant))
}

pub const LIMITS: &[Limit] = &[SUBMITS.count, SUBMIT_BURST, IN_FLIGHT, RUNNING];

/// The 429 of a submission over the in-flight cap.
pub fn in_flight_refusal(limit: u32) -> crate::error::ApiError {
    crate::limits::cap_refusal(
        &IN_FLIGHT,
        "too_many_tasks_in_flight",
        format!(
            "this account already has {limit} tasks pending or running; wait for some to finish"
        ),
    )
}
