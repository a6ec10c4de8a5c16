//! Settlement: each admitted message is settled exactly once from its handler's result:
//! fenced and acked (successes of a batch together), sent to its next retry tier, parked
//! (deferred), or dead-lettered with its reason and recorded for operators.

use super::admitted::Admitted;
use super::{BatchHandler, Context, Deps, Fate, Fencing, Handler, HandlerError, Outcome};
use crate::broker::{DeadLetterInfo, DeadReason, Delivery, Envelope};
use crate::dead_letters;
use crate::tally::What;

/// How a delivery's handling ended.
pub(super) enum Ending {
    Handled(Result<(), HandlerError>),
    /// Not run: its consumers died with it this many times (crash loop).
    Quarantined(u32),
}

impl From<Result<(), HandlerError>> for Ending {
    fn from(r: Result<(), HandlerError>) -> Self {
        Ending::Handled(r)
    }
}

/// Whose failure hook to call.
#[derive(Clone, Copy)]
pub(super) enum Hooks<'a> {
    One(&'a dyn Handler),
    Batch(&'a dyn BatchHandler),
}

impl Hooks<'_> {
    /// Who fences the handler's messages.
    pub(super) fn fencing(self) -> Fencing {
        match self {
            Hooks::One(_) => Fencing::Runtime,
            Hooks::Batch(h) => h.fencing(),
        }
    }

    pub(super) async fn on_failure(
        self,
        ctx: &Context,
        message: &Envelope,
        fate: &Fate,
    ) -> Result<(), HandlerError> {
        match self {
            Hooks::One(h) => h.on_failure(ctx, message, fate).await,
            Hooks::Batch(h) => h.on_failure(ctx, message, fate).await,
        }
    }
}

/// Settles an admitted delivery from its handler's result: fenced and acked, retried on
/// the next tier, or dead-lettered.
pub(super) async fn conclude(
    deps: &Deps,
    hooks: Hooks<'_>,
    ctx: &Context,
    admitted: Admitted,
    ending: Ending,
) -> Outcome {
    let Admitted {
        delivery,
        queue,
        envelope,
        token,
        span,
    } = admitted;
    let id = envelope.id.as_str();
    let result = match ending {
        Ending::Handled(r) => r,
        Ending::Quarantined(deaths) => {
            let error = format!(
                "its consumer died {deaths} times while holding it (abort, OOM or crash); quarantined"
            );
            let attempts = envelope.attempt + 1;
            let dead = Dead {
                delivery,
                queue: &queue,
                envelope: &envelope,
            };
            return dead
                .end(deps, hooks, ctx, DeadReason::CrashLoop, error, attempts)
                .await;
        }
    };
    match result {
        Ok(()) => {
            let a = Admitted {
                delivery,
                queue,
                envelope,
                token,
                span,
            };
            let mut settled = conclude_successes(deps, hooks.fencing(), vec![a]).await;
            settled
                .pop()
                .unwrap_or_else(|| Outcome::Unsettled("not settled".into()))
        }
        Err(HandlerError::Transient(e)) => {
            release(deps, id, token.as_deref()).await;
            let next = envelope.attempt + 1;
            if next >= queue.max_attempts {
                let dead = Dead {
                    delivery,
                    queue: &queue,
                    envelope: &envelope,
                };
                return dead
                    .end(deps, hooks, ctx, DeadReason::Exhausted, e, next)
                    .await;
            }
            let fate = Fate::Retry {
                next_attempt: next,
                error: e.clone(),
            };
            if let Err(hook) = hooks.on_failure(ctx, &envelope, &fate).await {
                delivery.requeue();
                return Outcome::Unsettled(format!("failure hook: {hook}"));
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
        Err(e @ (HandlerError::Deferred(_) | HandlerError::Yielded(_))) => {
            release(deps, id, token.as_deref()).await;
            tracing::debug!(reason = %e, "deferred");
            metrics::counter!("conveyor_messages_deferred_total", "queue" => queue.spec.key)
                .increment(1);
            // The envelope is unchanged (no attempt counted): send back the bytes as received.
            // A deferral (a tenant over its cap) goes on the second tier, not the first: a
            // deferred backlog that came back every second would fill the queue ahead of
            // everyone else's messages. A yield (over its weighted share while another
            // tenant waits) is the contended turn-taking itself: on the first, so the share
            // is taken up again within a second instead of the lane idling.
            let body = delivery.body.clone();
            let first = matches!(e, HandlerError::Yielded(_));
            let tier = deps
                .broker
                .topology()
                .retry_tier(&queue, if first { 1 } else { 2 });
            match delivery.retry(tier, body).await {
                Ok(()) => Outcome::Deferred,
                Err(err) => Outcome::Unsettled(err.to_string()),
            }
        }
        Err(HandlerError::Permanent(e)) => {
            release(deps, id, token.as_deref()).await;
            let attempts = envelope.attempt + 1;
            let dead = Dead {
                delivery,
                queue: &queue,
                envelope: &envelope,
            };
            dead.end(deps, hooks, ctx, DeadReason::Permanent, e, attempts)
                .await
        }
    }
}

/// A message on its way to the dead-letter queue.
struct Dead<'a> {
    delivery: Delivery,
    queue: &'a crate::broker::topology::ResolvedQueue,
    envelope: &'a Envelope,
}

impl Dead<'_> {
    /// The failure hook first (the domain records the end: FAILED, a refund; if it
    /// cannot, the message goes back unsettled), then the dead letter with `error` added
    /// to the message's history.
    async fn end(
        self,
        deps: &Deps,
        hooks: Hooks<'_>,
        ctx: &Context,
        reason: DeadReason,
        error: String,
        attempts: u32,
    ) -> Outcome {
        let fate = Fate::DeadLetter {
            reason,
            error: error.clone(),
        };
        if let Err(hook) = hooks.on_failure(ctx, self.envelope, &fate).await {
            self.delivery.requeue();
            return Outcome::Unsettled(format!("failure hook: {hook}"));
        }
        let info = DeadLetterInfo {
            reason,
            origin_queue: self.queue.name.clone(),
            attempts,
            last_error: error.clone(),
        };
        let failed = self.envelope.with_failure(&self.queue.name, &error);
        dead_letter_envelope(deps, self.delivery, &failed, info).await
    }
}

/// Settles the messages whose handler succeeded, together: their fence rows in one
/// write (when the runtime fences the handler's messages), their dedupe marks in
/// one call, their acks at once (the channel's settle task coalesces them into one
/// `multiple` ack where the tags allow). In the order given.
pub(super) async fn conclude_successes(
    deps: &Deps,
    fencing: Fencing,
    done: Vec<Admitted>,
) -> Vec<Outcome> {
    let Some(queue) = done.first().map(|a| a.queue.spec.key) else {
        return Vec::new();
    };
    let ids: Vec<&str> = done.iter().map(|a| a.envelope.id.as_str()).collect();
    let marked = match deps.fence_to_write(fencing) {
        Some(fence) => fence.mark_many(&ids, queue).await,
        None => Ok(()),
    };
    if let Err(e) = marked {
        let why = format!("fence write failed: {e}");
        let mut out = Vec::with_capacity(done.len());
        for a in done {
            release(deps, &a.envelope.id, a.token.as_deref()).await;
            a.delivery.requeue();
            out.push(Outcome::Unsettled(why.clone()));
        }
        return out;
    }
    // Committed and fenced, not acked: the redelivery must change nothing.
    crate::crash_point!("consumer::before_ack");
    let _ = deps.dedupe.complete_many(&ids, deps.done_ttl).await;
    metrics::counter!("conveyor_messages_processed_total", "queue" => queue)
        .increment(done.len() as u64);
    // Attempts per message, the retry distribution (seed 003): 1 for a first-time success.
    let attempts = metrics::histogram!("conveyor_message_attempts", "queue" => queue);
    for a in &done {
        attempts.record(f64::from(a.envelope.attempt + 1));
    }
    deps.tally.add(queue, What::Processed, done.len() as u64);
    futures::future::join_all(
        done.into_iter()
            .map(|a| settle_ack(a.delivery, Outcome::Acked)),
    )
    .await
}

pub(super) async fn release(deps: &Deps, id: &str, token: Option<&str>) {
    if let Some(token) = token {
        let _ = deps.dedupe.release(id, token).await;
    }
}

pub(super) async fn settle_ack(delivery: Delivery, outcome: Outcome) -> Outcome {
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
pub(super) async fn dead_letter(
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
        deps.needs_fix_after,
    )
    .await
    {
        delivery.requeue();
        return Outcome::Unsettled(format!("recording the dead letter failed: {e}"));
    }
    metrics::counter!("conveyor_messages_dead_lettered_total", "queue" => delivery.queue.key, "reason" => info.reason.as_str()).increment(1);
    deps.tally.add(delivery.queue.key, What::Dead, 1);
    match delivery.dead_letter(body, &info).await {
        Ok(()) => Outcome::DeadLettered(info.reason),
        Err(e) => Outcome::Unsettled(e.to_string()),
    }
}
