//! The canary's sender: a job of the `canary` group that sends a ping every
//! `canary.interval_ms` through the outbox, so each round trip crosses every part a real
//! message does (transaction, relay, broker, consumer, database).

use std::time::Duration;

use sea_orm::DatabaseConnection;
use tokio_util::sync::CancellationToken;

use super::store;
use crate::outbox::Relay;

/// Runs until `shutdown` (at once if `interval` is zero).
pub async fn run(
    db: DatabaseConnection,
    relay: Relay,
    interval: Duration,
    max_payload: usize,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    if interval.is_zero() {
        return Ok(());
    }
    loop {
        match store::send(&db, max_payload).await {
            Ok(_) => {
                // As every domain does after an outbox write: the relay publishes now,
                // not at its next poll.
                relay.notify();
                metrics::counter!("conveyor_canary_sent_total").increment(1);
            }
            // A database that refuses the ping is what the canary reports: the gauges
            // show no fresh round trip; nothing else to do here but try again.
            Err(e) => tracing::warn!(error = %e, "sending a canary ping failed"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
