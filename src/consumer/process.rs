//! One delivery, start to settle.

use std::panic::AssertUnwindSafe;

use futures::FutureExt as _;
use sha2::{Digest as _, Sha256};
use tracing::Instrument as _;

use super::{Context, Deps, Fate, Handler, HandlerError};
use crate::broker::{DeadLetterInfo, DeadReason, Delivery, Envelope};
use crate::dead_letters;
use crate::dedupe::Claim;

/// How a delivery was settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The handler succeeded; fenced and acked.
    Acked,
    /// Already processed (dedupe store or database fence); acked without running.
    Duplicate,
    /// Another consumer holds the message's lease; parked on the first retry tier.
    Busy,
    /// Sent to a retry tier for `attempt`.
    Retried { attempt: u32 },
    /// Sent to the dead-letter queue.
    DeadLettered(DeadReason),
    /// The broker could not settle it; it will be redelivered.
    Unsettled(String),
}

/// Processes one delivery and settles it exactly once.
pub async fn process_one(deps: &Deps, handler: &dyn Handler, delivery: Delivery) -> Outcome {
    let queue = deps.broker.topology().queue(delivery.queue).clone();
    let envelope = match Envelope::decode(&delivery.body, deps.max_payload_bytes) {
        Ok(e) => e,
        Err(e) => {
            let id = format!(
                "malformed-{}",
                &hex::encode(Sha256::digest(&delivery.body))[..32]
            );
            let info = DeadLetterInfo {
                reason: DeadReason::Malformed,
                origin_queue: queue.name.clone(),
                attempts: 0,
                last_error: e.to_string(),
            };
            tracing::warn!(queue = %queue.name, error = %e, "malformed message dead-lettered");
            let body = delivery.body.clone();
            return dead_letter(deps, delivery, body, &id, "unknown", &[], info).await;
        }
    };
    // The span instruments the future rather than being entered: an entered guard held
    // across awaits follows the task to other threads and corrupts the span stack
    // (seen as a tracing-subscriber panic, "tried to clone a span that already closed").
    let span = tracing::info_span!("message", queue = %queue.spec.key, id = %envelope.id, kind = %envelope.kind, attempt = envelope.attempt);
    process_envelope(deps, handler, delivery, queue, envelope)
        .instrument(span)
        .await
}

/// [`process_one`] once the body decoded.
async fn process_envelope(
    deps: &Deps,
    handler: &dyn Handler,
    delivery: Delivery,
    queue: crate::broker::topology::ResolvedQueue,
    envelope: Envelope,
) -> Outcome {
    let id = envelope.id.as_str();

    // Fast path: the dedupe store. If it is down, the database fence still decides.
    let token = match deps.dedupe.claim(id, deps.lease).await {
        Ok((Claim::Done, _)) => return settle_ack(delivery, Outcome::Duplicate).await,
        Ok((Claim::InProgress, _)) => {
            // Never ack what someone else is processing: look again after the first tier.
            // The envelope is unchanged: send back the bytes as received.
            let body = delivery.body.clone();
            return match delivery.retry(0, body).await {
                Ok(()) => Outcome::Busy,
                Err(e) => Outcome::Unsettled(e.to_string()),
            };
        }
        Ok((Claim::Acquired, token)) => Some(token),
        Err(e) => {
            tracing::warn!(error = %e, "dedupe store unavailable; relying on the database fence");
            None
        }
    };
    let fenced = match &deps.fence {
        Some(fence) => fence.is_processed(id).await,
        None => Ok(false),
    };
    match fenced {
        Ok(true) => {
            let _ = deps.dedupe.complete(id, deps.done_ttl).await;
            return settle_ack(delivery, Outcome::Duplicate).await;
        }
        Ok(false) => {}
        Err(e) => {
            // Cannot tell whether it ran: hand it back rather than risk a second effect.
            release(deps, id, token.as_deref()).await;
            delivery.requeue();
            return Outcome::Unsettled(format!("fence check failed: {e}"));
        }
    }

    let ctx = Context {
        db: deps.db.clone(),
        broker: deps.broker.clone(),
        queue: delivery.queue,
    };
    let result = AssertUnwindSafe(handler.handle(&ctx, &envelope))
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "handler panicked".to_owned());
            Err(HandlerError::Transient(format!("panic: {what}")))
        });

    match result {
        Ok(()) => {
            let marked = match &deps.fence {
                Some(fence) => fence.mark(id, queue.spec.key).await,
                None => Ok(()),
            };
            if let Err(e) = marked {
                release(deps, id, token.as_deref()).await;
                delivery.requeue();
                return Outcome::Unsettled(format!("fence write failed: {e}"));
            }
            let _ = deps.dedupe.complete(id, deps.done_ttl).await;
            metrics::counter!("conveyor_messages_processed_total", "queue" => queue.spec.key)
                .increment(1);
            settle_ack(delivery, Outcome::Acked).await
        }
        Err(HandlerError::Transient(e)) => {
            release(deps, id, token.as_deref()).await;
            let next = envelope.attempt + 1;
            let fate = if next >= queue.max_attempts {
                Fate::DeadLetter {
                    reason: DeadReason::Exhausted,
                    error: e.clone(),
                }
            } else {
                Fate::Retry {
                    next_attempt: next,
                    error: e.clone(),
                }
            };
            if let Err(hook) = handler.on_failure(&ctx, &envelope, &fate).await {
                delivery.requeue();
                return Outcome::Unsettled(format!("failure hook: {hook}"));
            }
            if next >= queue.max_attempts {
                let info = DeadLetterInfo {
                    reason: DeadReason::Exhausted,
                    origin_queue: queue.name.clone(),
                    attempts: next,
                    last_error: e.clone(),
                };
                let failed = envelope.with_failure(&queue.name, &e);
                return dead_letter_envelope(deps, delivery, &failed, info).await;
            }
            tracing::info!(error = %e, next_attempt = next, "transient failure; retrying");
            metrics::counter!("conveyor_messages_retried_total", "queue" => queue.spec.key)
                .increment(1);
            let body = match envelope.next_attempt(&queue.name, &e).encode(usize::MAX) {
                Ok(b) => b,
                Err(err) => return Outcome::Unsettled(err.to_string()),
            };
            let tier = deps.broker.topology().retry_tier(&queue, next);
            match delivery.retry(tier, body).await {
                Ok(()) => Outcome::Retried { attempt: next },
                Err(err) => Outcome::Unsettled(err.to_string()),
            }
        }
        Err(HandlerError::Permanent(e)) => {
            release(deps, id, token.as_deref()).await;
            let fate = Fate::DeadLetter {
                reason: DeadReason::Permanent,
                error: e.clone(),
            };
            if let Err(hook) = handler.on_failure(&ctx, &envelope, &fate).await {
                delivery.requeue();
                return Outcome::Unsettled(format!("failure hook: {hook}"));
            }
            let info = DeadLetterInfo {
                reason: DeadReason::Permanent,
                origin_queue: queue.name.clone(),
                attempts: envelope.attempt + 1,
                last_error: e.clone(),
            };
            let failed = envelope.with_failure(&queue.name, &e);
            dead_letter_envelope(deps, delivery, &failed, info).await
        }
    }
}

async fn release(deps: &Deps, id: &str, token: Option<&str>) {
    if let Some(token) = token {
        let _ = deps.dedupe.release(id, token).await;
    }
}

async fn settle_ack(delivery: Delivery, outcome: Outcome) -> Outcome {
    match delivery.ack().await {
        Ok(()) => outcome,
        Err(e) => Outcome::Unsettled(e.to_string()),
    }
}

async fn dead_letter_envelope(
    deps: &Deps,
    delivery: Delivery,
    env: &Envelope,
    info: DeadLetterInfo,
) -> Outcome {
    let body = match env.encode(usize::MAX) {
        Ok(b) => b,
        Err(e) => return Outcome::Unsettled(e.to_string()),
    };
    tracing::warn!(reason = info.reason.as_str(), error = %info.last_error, "dead-lettered");
    dead_letter(
        deps,
        delivery,
        body,
        &env.id,
        &env.kind,
        &env.failures,
        info,
    )
    .await
}

/// Records the dead letter for operators, then moves the message to the DLQ.
async fn dead_letter(
    deps: &Deps,
    delivery: Delivery,
    body: Vec<u8>,
    id: &str,
    kind: &str,
    history: &[crate::broker::Failure],
    info: DeadLetterInfo,
) -> Outcome {
    if let Err(e) = dead_letters::record(
        &deps.db,
        id,
        delivery.queue.key,
        kind,
        &info,
        history,
        &body,
    )
    .await
    {
        delivery.requeue();
        return Outcome::Unsettled(format!("recording the dead letter failed: {e}"));
    }
    metrics::counter!("conveyor_messages_dead_lettered_total", "queue" => delivery.queue.key, "reason" => info.reason.as_str()).increment(1);
    match delivery.dead_letter(body, &info).await {
        Ok(()) => Outcome::DeadLettered(info.reason),
        Err(e) => Outcome::Unsettled(e.to_string()),
    }
}
