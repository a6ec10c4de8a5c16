//! The consume loop: one task per delivery, bounded by the subscription's prefetch;
//! on shutdown, stop taking deliveries, give in-flight ones a grace period, then hand
//! back whatever is unfinished (dropped deliveries return to their queue).

use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{Deps, Handler, process_one};
use crate::broker::QueueSpec;

/// Consumes `queue` with `handler` until `shutdown` is cancelled.
pub async fn run(
    deps: Deps,
    queue: &'static QueueSpec,
    handler: Arc<dyn Handler>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let mut sub = deps.broker.subscribe(queue).await?;
    tracing::info!(queue = queue.key, "consumer started");
    let mut in_flight = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            delivery = sub.next() => {
                let Some(delivery) = delivery else { break };
                let (deps, handler) = (deps.clone(), handler.clone());
                in_flight.spawn(async move {
                    let outcome = process_one(&deps, handler.as_ref(), delivery).await;
                    tracing::debug!(?outcome, "settled");
                });
            }
            // Reap finished tasks so the set does not grow with every message.
            Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {}
        }
    }
    sub.cancel().await;
    let grace = deps.shutdown_grace;
    let drained = tokio::time::timeout(grace, async {
        while in_flight.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            queue = queue.key,
            unfinished = in_flight.len(),
            ?grace,
            "handing unfinished messages back to the broker"
        );
        in_flight.shutdown().await;
    }
    tracing::info!(queue = queue.key, "consumer stopped");
    Ok(())
}
