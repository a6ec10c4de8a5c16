//! The consume loop: one task per delivery (or per batch), bounded by the subscription's
//! prefetch; on shutdown, stop taking deliveries, give in-flight ones a grace period, then
//! hand back whatever is unfinished (dropped deliveries return to their queue).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{Deps, Handler, Worker, process_batch, process_one};
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
/// the first (a quiet queue does not wait for a full batch), and handles at most
/// `in_flight` batches at a time.
pub async fn serve(
    deps: Deps,
    queue: &'static QueueSpec,
    worker: Worker,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let resolved = deps.broker.topology().queue(queue);
    // The concurrency an operator set at run time, if any, from the first delivery on.
    let prefetch = match super::concurrency::of(&deps.db, queue.key).await {
        Ok(set) => set.unwrap_or(resolved.prefetch),
        Err(e) => {
            tracing::warn!(queue = queue.key, error = %e, "concurrency not read; configured until the next poll");
            resolved.prefetch
        }
    };
    let mut sub = deps.broker.subscribe_at(queue, prefetch).await?;
    // Counted as a consumer (with its prefetch) in this process's ops report while it
    // runs; the fair share reads its slots there too.
    let mut consuming = Consuming::new(deps.tally.clone(), queue.key, prefetch);
    // The concurrency an operator set at run time, read every `settings_poll`.
    let mut poll = tokio::time::interval(deps.settings_poll);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut in_flight = JoinSet::new();
    // The queue's outcomes are on /metrics from the start, so a rate over them (the
    // retry-rate alert) reads 0 before the first retry instead of nothing.
    for counter in [
        "conveyor_messages_processed_total",
        "conveyor_messages_retried_total",
    ] {
        metrics::counter!(counter, "queue" => queue.key).increment(0);
    }
    match worker {
        Worker::One(handler) => {
            tracing::info!(queue = queue.key, "consumer started");
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    delivery = sub.next() => {
                        let Some(delivery) = delivery else { break };
                        let (deps, handler) = (deps.clone(), handler.clone());
                        // Counted from receipt to settlement (see `Tally::in_flight`).
                        let busy = deps.tally.busy(queue.key, 1);
                        in_flight.spawn(async move {
                            let _busy = busy;
                            let outcome = process_one(&deps, handler.as_ref(), delivery).await;
                            tracing::debug!(?outcome, "settled");
                        });
                    }
                    // Reap finished tasks so the set does not grow with every message.
                    Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {}
                    _ = poll.tick() => follow(&deps, queue, sub.as_mut(), &mut consuming, None).await,
                }
            }
        }
        Worker::Batch(handler) => {
            let (max, linger) = (resolved.batch, resolved.linger);
            // Slots that follow the prefetch (no `in_flight` of the queue's own) follow
            // a run-time change of it too.
            let follows_prefetch = resolved.in_flight == usize::from(resolved.prefetch);
            let in_flight_slots = if follows_prefetch {
                usize::from(prefetch)
            } else {
                resolved.in_flight
            };
            let slots = Arc::new(Semaphore::new(in_flight_slots));
            let follows = follows_prefetch.then_some(&slots);
            tracing::info!(
                queue = queue.key,
                batch = max,
                in_flight = in_flight_slots,
                prefetch,
                "batch consumer started"
            );
            loop {
                // A free slot first: deliveries wait in the prefetch buffer meanwhile and
                // fill the next batch.
                let slot = tokio::select! {
                    _ = shutdown.cancelled() => break,
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(s) => s,
                        Err(_) => break,
                    },
                };
                while in_flight.try_join_next().is_some() {}
                let first = tokio::select! {
                    _ = shutdown.cancelled() => break,
                    delivery = sub.next() => match delivery {
                        Some(d) => d,
                        None => break,
                    },
                    _ = poll.tick() => {
                        follow(&deps, queue, sub.as_mut(), &mut consuming, follows).await;
                        continue;
                    }
                };
                let batch = gather(sub.as_mut(), first, max, linger, &shutdown).await;
                let (deps, handler) = (deps.clone(), handler.clone());
                let busy = deps.tally.busy(queue.key, batch.len() as u64);
                in_flight.spawn(async move {
                    let _busy = busy;
                    let outcomes = process_batch(&deps, handler.as_ref(), batch).await;
                    tracing::debug!(?outcomes, "batch settled");
                    drop(slot);
                });
            }
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

/// Follows the concurrency an operator set for `queue` (if any): the subscription's
/// prefetch, the tally's count and the batch slots that follow the prefetch.
async fn follow(
    deps: &Deps,
    queue: &'static QueueSpec,
    sub: &mut dyn Subscription,
    consuming: &mut Consuming,
    slots: Option<&Arc<Semaphore>>,
) {
    let wanted = match super::concurrency::of(&deps.db, queue.key).await {
        Ok(Some(n)) if n != consuming.prefetch => n,
        Ok(_) => return,
        Err(e) => {
            tracing::debug!(queue = queue.key, error = %e, "concurrency not read");
            return;
        }
    };
    if let Err(e) = sub.set_prefetch(wanted).await {
        tracing::warn!(queue = queue.key, error = %e, "concurrency not changed; next poll retries");
        return;
    }
    tracing::info!(
        queue = queue.key,
        from = consuming.prefetch,
        to = wanted,
        "concurrency changed"
    );
    if let Some(slots) = slots {
        crate::broker::resize_permits(slots, usize::from(consuming.prefetch), usize::from(wanted));
    }
    consuming.set(wanted);
}

/// Registers a running consumer in the tally; unregisters it when dropped (however the
/// consume loop ends).
struct Consuming {
    tally: Arc<crate::tally::Tally>,
    queue: &'static str,
    prefetch: u16,
}

impl Consuming {
    fn new(tally: Arc<crate::tally::Tally>, queue: &'static str, prefetch: u16) -> Self {
        tally.consuming(queue, prefetch, true);
        Consuming {
            tally,
            queue,
            prefetch,
        }
    }
}

impl Consuming {
    fn set(&mut self, prefetch: u16) {
        self.tally.reconsuming(self.queue, self.prefetch, prefetch);
        self.prefetch = prefetch;
    }
}

impl Drop for Consuming {
    fn drop(&mut self) {
        self.tally.consuming(self.queue, self.prefetch, false);
    }
}
