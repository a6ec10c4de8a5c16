//! Gauges sampled when Prometheus scrapes `/metrics`: as fresh as the scrape, and no
//! work between scrapes. Every source has a time limit; one that fails or is slow keeps
//! its last values and counts `conveyor_metrics_sample_failures_total{source}`, so a
//! sick broker or database cannot hang the scrape.
//!
//! Several API instances report the same queue and table figures: aggregate with
//! `max`, not `sum`.

use std::future::Future;
use std::time::Duration;

use chrono::Utc;
use futures::future::BoxFuture;
use sea_orm::DatabaseConnection;

use crate::broker::Broker;
use crate::outbox::Relay;

/// Gauges of a module above this one (dead letters waiting, a domain's active tasks by
/// status), refreshed at each scrape within the
/// same time limit as the platform's own; `source` names its failure count.
#[derive(Clone, Copy)]
pub struct Gauge {
    pub source: &'static str,
    pub sample: for<'a> fn(&'a DatabaseConnection) -> BoxFuture<'a, anyhow::Result<()>>,
}

/// Refreshes every gauge, each source within `limit`.
pub async fn sample(
    db: &DatabaseConnection,
    broker: &dyn Broker,
    relay: &Relay,
    domains: &[Gauge],
    limit: Duration,
) {
    let [b, o] = SOURCES;
    let domain_gauges = futures::future::join_all(
        domains
            .iter()
            .map(|g| bounded(g.source, limit, (g.sample)(db))),
    );
    tokio::join!(
        bounded(b, limit, queues(broker)),
        bounded(o, limit, outbox_lag(relay)),
        domain_gauges,
    );
}

/// The platform's own sources, each with its own failure count.
const SOURCES: [&str; 2] = ["broker", "outbox"];

/// Starts the failure counters at zero, so an alert on their rate sees the first one.
pub fn register(domains: &[Gauge]) {
    let sources = SOURCES
        .iter()
        .copied()
        .chain(domains.iter().map(|g| g.source));
    for source in sources {
        metrics::counter!("conveyor_metrics_sample_failures_total", "source" => source).absolute(0);
    }
}

async fn bounded<F>(source: &'static str, limit: Duration, work: F)
where
    F: Future<Output = anyhow::Result<()>>,
{
    let failed = match tokio::time::timeout(limit, work).await {
        Ok(Ok(())) => return,
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no answer within {limit:?}"),
    };
    tracing::warn!(source, error = %failed, "metrics gauge not refreshed");
    metrics::counter!("conveyor_metrics_sample_failures_total", "source" => source).increment(1);
}

/// Messages waiting per queue: ready for a consumer, parked in a retry tier, dead.
async fn queues(broker: &dyn Broker) -> anyhow::Result<()> {
    for q in &broker.topology().queues {
        let key = q.spec.key;
        let (ready, retrying) = crate::broker::waiting(broker, q).await?;
        let stages = [
            ("ready", ready),
            ("retrying", retrying),
            ("dead", broker.depth(&q.dlq).await?),
        ];
        for (stage, n) in stages {
            metrics::gauge!("conveyor_queue_messages", "queue" => key, "stage" => stage)
                .set(n as f64);
        }
        metrics::gauge!("conveyor_queue_concurrency", "queue" => key).set(f64::from(q.prefetch));
    }
    Ok(())
}

/// Rows committed but not yet published, and how long the oldest has waited.
async fn outbox_lag(relay: &Relay) -> anyhow::Result<()> {
    let lag = relay.lag().await?;
    metrics::gauge!("conveyor_outbox_pending").set(lag.pending as f64);
    metrics::gauge!("conveyor_outbox_oldest_pending_seconds").set(lag.oldest.map_or(0.0, age_secs));
    Ok(())
}

/// Seconds since `since`, never negative (clocks of several hosts).
pub fn age_secs(since: chrono::DateTime<Utc>) -> f64 {
    (Utc::now() - since).num_milliseconds().max(0) as f64 / 1000.0
}
