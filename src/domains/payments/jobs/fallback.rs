//! The broker-down fallback (seed 001, "MQ故障自动降级同步兜底"): a job of the `payments`
//! group that pings the broker every second; once it has been unreachable for
//! `fallback_after_secs`, it applies recorded events itself, oldest first, until the
//! broker answers again. Exactly once still holds: an event is applied by the conditional
//! transition of its inbox row, so when the broker returns and the relay publishes the
//! apply messages, the consumer finds them applied and acknowledges them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use tokio_util::sync::CancellationToken;

use crate::domains::payments::service::Payments;
use crate::domains::payments::store;

/// How often the broker is pinged, and how long a ping may take.
const TICK: Duration = Duration::from_secs(1);
/// Events per round while the broker is down.
const BATCH: u64 = 100;

/// Runs until `shutdown` (at once if `payments.fallback_after_secs` is 0).
pub async fn run(payments: Arc<Payments>, shutdown: CancellationToken) -> anyhow::Result<()> {
    let after = payments.settings.fallback_after_secs;
    if after == 0 {
        return Ok(());
    }
    watch(payments, Duration::from_secs(after), shutdown).await;
    Ok(())
}

async fn watch(payments: Arc<Payments>, after: Duration, shutdown: CancellationToken) {
    let mut down_since: Option<Instant> = None;
    metrics::gauge!("conveyor_payments_fallback_active").set(0.0);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(TICK) => {}
        }
        let up = matches!(
            tokio::time::timeout(TICK, payments.broker.ping()).await,
            Ok(Ok(()))
        );
        if up {
            if down_since.take().is_some_and(|t| t.elapsed() >= after) {
                tracing::info!("broker reachable again: payment fallback stands down");
            }
            metrics::gauge!("conveyor_payments_fallback_active").set(0.0);
            continue;
        }
        let since = *down_since.get_or_insert_with(Instant::now);
        if since.elapsed() < after {
            continue;
        }
        metrics::gauge!("conveyor_payments_fallback_active").set(1.0);
        if let Err(e) = round(&payments).await {
            tracing::warn!(error = %e, "payment fallback round failed");
        }
    }
}

/// Applies what the inbox holds (received before this tick began).
async fn round(payments: &Payments) -> anyhow::Result<()> {
    let before = Utc::now() - chrono::Duration::from_std(TICK).unwrap_or_default();
    let ids = store::unapplied(&payments.db, before, BATCH).await?;
    if ids.is_empty() {
        return Ok(());
    }
    tracing::warn!(
        events = ids.len(),
        "broker down: applying payment events directly"
    );
    for id in ids {
        // One event that fails (a deadlock victim, a bad row) must not hold up the rest:
        // it stays RECEIVED for the next round or the consumer.
        match payments.apply(id).await {
            Ok(_) => metrics::counter!("conveyor_payments_fallback_applied_total").increment(1),
            Err(e) => {
                tracing::warn!(event = id, error = %e, "fallback could not apply a payment event")
            }
        }
    }
    Ok(())
}
