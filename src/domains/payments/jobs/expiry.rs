//! Unpaid intents expire: a job of the `payments` group that, every minute, turns
//! CREATED intents older than `payments.intent_ttl_secs` into EXPIRED, so they no longer
//! count toward a user's open intents (`limits.open_payments`). A payment that still
//! arrives for one is granted all the same: expiry never loses money that came.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::domains::payments::service::Payments;
use crate::domains::payments::store;

/// How often the job looks, at most (a shorter TTL is looked at twice per TTL).
const EVERY: Duration = Duration::from_secs(60);

/// Runs until `shutdown` (at once if `payments.intent_ttl_secs` is 0).
pub async fn run(payments: Arc<Payments>, shutdown: CancellationToken) -> anyhow::Result<()> {
    let ttl_secs = payments.settings.intent_ttl_secs;
    if ttl_secs == 0 {
        return Ok(());
    }
    let ttl = chrono::Duration::seconds(i64::try_from(ttl_secs).unwrap_or(i64::MAX / 2));
    let every = EVERY.min(Duration::from_millis(ttl_secs.saturating_mul(500)));
    loop {
        match store::expire_unpaid(&payments.db, chrono::Utc::now() - ttl).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(expired = n, "unpaid payment intents expired");
                metrics::counter!("conveyor_payments_expired_total").increment(n);
            }
            Err(e) => tracing::warn!(error = %e, "expiring unpaid payment intents failed"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(every) => {}
        }
    }
}
