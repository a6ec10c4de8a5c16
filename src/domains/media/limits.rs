//! The per-tenant limit uploads declare (`[limits]`, plans, admins' overrides).

use crate::error::ApiError;
use crate::limits::{Limit, Limits, StreamPermit};

/// Uploads streaming through one API instance at once per tenant: each holds a
/// connection and up to two parts (`storage.part_bytes`) of memory while it streams, so
/// one tenant's many uploads cannot take the instance's memory or connections.
pub const CONCURRENT: Limit = Limit::new(
    "uploads_concurrent",
    4,
    "uploads streaming through the API at once per tenant, per API instance (POST /v1/uploads)",
);

pub const LIMITS: &[Limit] = &[CONCURRENT];

/// A place for one more upload of `user_id`'s tenant, held until the upload's answer, or
/// 429 `too_many_uploads`.
pub(super) async fn hold(limits: &Limits, user_id: &str) -> Result<StreamPermit, ApiError> {
    match limits.hold(&CONCURRENT, user_id).await {
        Some(permit) => Ok(permit),
        None => Err(ApiError::too_many(
            "too_many_uploads",
            format!(
                "this account already has {} uploads in progress on this server (limits.uploads_concurrent); wait for one to finish",
                limits.value(&CONCURRENT, user_id).await
            ),
            5,
        )),
    }
}
