//! The consume loop: one task per delivery (or per batch), bounded by the subscription's
//! prefetch; on shutdown, stop taking deliveries, give in-flight ones a grace period, then
//! hand back whatever is unfinished (dropped deliveries return to their queue).

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{BatchHandler, Deps, Handler, Worker, process_batch, process_one};
use crate::broker::{Delivery, QueueSpec, Subscription};

/// Consumes `queue` with `handler` until `shutdown` is cancelled.
pub async fn run(
    deps: Deps,
    queue: &'static QueueSpec,
    handler: Arc<dyn Handler>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    serve(deps, queue, Worker::One(handler), shutdown).await
}

/// Consumes `queue` with `worker` until `shutdown` is cancelled. A batch worker gets
/// up to the queue's `batch` deliveries at once, gathered for at most its `linger` after
/// the first (a quiet queue does not wait for a full batch).
pub async fn serve(
    deps: Deps,
    queue: &'static QueueSpec,
    worker: Worker,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let resolved = deps.broker.topology().queue(queue);
    let (max, linger) = match &worker {
        Worker::One(_) => (1, Duration::ZERO),
        Worker::Batch(_) => (resolved.batch.max(1), resolved.linger),
    };
    let mut sub = deps.broker.subscribe(queue).await?;
    tracing::info!(queue = queue.key, batch = max, "consumer started");
    let mut in_flight = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            delivery = sub.next() => {
                let Some(first) = delivery else { break };
                let (deps, worker) = (deps.clone(), worker.clone());
                match worker {
                    Worker::One(handler) => {
                        in_flight.spawn(async move {
                            let outcome = process_one(&deps, handler.as_ref(), first).await;
                            tracing::debug!(?outcome, "settled");
                        });
                    }
                    Worker::Batch(handler) => {
                        let batch = gather(sub.as_mut(), first, max, linger, &shutdown).await;
                        spawn_batch(&mut in_flight, deps, handler, batch);
                    }
                }
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

/// Up to `max` deliveries: `first`, then whatever arrives within `linger` of it.
async fn gather(
    sub: &mut dyn Subscription,
    first: Delivery,
    max: usize,
    linger: Duration,
    shutdown: &CancellationToken,
) -> Vec<Delivery> {
    let mut batch = vec![first];
    let deadline = tokio::time::Instant::now() + linger;
    while batch.len() < max {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep_until(deadline) => break,
            next = sub.next() => match next {
                Some(d) => batch.push(d),
                None => break,
            },
        }
    }
    batch
}

fn spawn_batch(
    in_flight: &mut JoinSet<()>,
    deps: Deps,
    handler: Arc<dyn BatchHandler>,
    batch: Vec<Delivery>,
) {
    in_flight.spawn(async move {
        let outcomes = process_batch(&deps, handler.as_ref(), batch).await;
        tracing::debug!(?outcomes, "batch settled");
    });
}
