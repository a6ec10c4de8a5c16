//! One delivery (or one batch of them), start to settle: [`admit`] decodes and claims,
//! the handler runs, [`conclude`] settles each message from its own result.

use std::panic::AssertUnwindSafe;

use futures::FutureExt as _;
use tracing::Instrument as _;

use super::{BatchHandler, Context, Deps, Fate, Handler, HandlerError};
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
    /// The handler deferred it (not a failure); parked on the second retry tier.
    Deferred,
    /// Sent to a retry tier for `attempt`.
    Retried { attempt: u32 },
    /// Sent to the dead-letter queue.
    DeadLettered(DeadReason),
    /// The broker could not settle it; it will be redelivered.
    Unsettled(String),
}

/// Processes one delivery and settles it exactly once.
pub async fn process_one(deps: &Deps, handler: &dyn Handler, delivery: Delivery) -> Outcome {
    let admitted = match admit(deps, delivery).await {
        Admission::Run(a) => a,
        Admission::Quarantine(a, deaths) => {
            let span = a.span();
            let ctx = deps.context(a.delivery.queue);
            return conclude(
                deps,
                Hooks::One(handler),
                &ctx,
                a,
                Ending::Quarantined(deaths),
            )
            .instrument(span)
            .await;
        }
        Admission::Settled(outcome) => return outcome,
    };
    let span = admitted.span();
    async move {
        let ctx = deps.context(admitted.delivery.queue);
        let claim = admitted.claim();
        let result = renewing(
            deps,
            claim.as_slice(),
            guarded(handler.handle(&ctx, &admitted.envelope)),
        )
        .await
        .unwrap_or_else(Err);
        conclude(deps, Hooks::One(handler), &ctx, admitted, result.into()).await
    }
    .instrument(span)
    .await
}

/// Processes a batch of deliveries of one queue: each is admitted on its own (decoded,
/// claimed, checked against the fence), the handler runs once for all admitted ones, and
/// each is settled on its own from its own result, so one message's failure never fails
/// its neighbours. Outcomes come back in the order of `deliveries`.
pub async fn process_batch(
    deps: &Deps,
    handler: &dyn BatchHandler,
    deliveries: Vec<Delivery>,
) -> Vec<Outcome> {
    let Some(queue) = deliveries.first().map(|d| d.queue) else {
        return Vec::new();
    };
    let admissions =
        futures::future::join_all(deliveries.into_iter().map(|d| admit(deps, d))).await;
    let mut outcomes: Vec<Option<Outcome>> = Vec::with_capacity(admissions.len());
    // What each admitted message is settled from: quarantined ones now, the others once
    // the handler answered. The envelopes move into the handler's slice and back, so the
    // batch is never copied.
    let mut endings: Vec<(usize, Admitted, Ending)> = Vec::new();
    let mut held = Vec::new();
    let mut envelopes = Vec::new();
    for (i, a) in admissions.into_iter().enumerate() {
        outcomes.push(None);
        match a {
            Admission::Run(Admitted {
                delivery,
                queue,
                envelope,
                token,
            }) => {
                held.push((i, delivery, queue, token));
                envelopes.push(envelope);
            }
            Admission::Quarantine(a, deaths) => endings.push((i, a, Ending::Quarantined(deaths))),
            Admission::Settled(o) => outcomes[i] = Some(o),
        }
    }
    let ctx = deps.context(queue);
    if !envelopes.is_empty() {
        let n = envelopes.len();
        let span = tracing::info_span!("batch", queue = %queue.key, size = n);
        let claims: Vec<(&str, &str)> = held
            .iter()
            .zip(&envelopes)
            .filter_map(|((_, _, _, token), e)| token.as_deref().map(|t| (e.id.as_str(), t)))
            .collect();
        let answer = renewing(
            deps,
            &claims,
            guarded(handler.handle_batch(&ctx, &envelopes)),
        )
        .instrument(span)
        .await;
        let failed = |e: String| -> Vec<Result<(), HandlerError>> {
            (0..n)
                .map(|_| Err(HandlerError::Transient(e.clone())))
                .collect()
        };
        let results = match answer {
            Ok(r) if r.len() == n => r,
            Ok(r) => failed(format!(
                "batch handler answered {} results for {n} messages",
                r.len()
            )),
            Err(e) => failed(e.to_string()),
        };
        for (((i, delivery, queue, token), envelope), result) in
            held.into_iter().zip(envelopes).zip(results)
        {
            let a = Admitted {
                delivery,
                queue,
                envelope,
                token,
            };
            endings.push((i, a, result.into()));
        }
    }
    let settled = futures::future::join_all(endings.into_iter().map(|(i, a, ending)| {
        let span = a.span();
        let ctx = &ctx;
        async move {
            (
                i,
                conclude(deps, Hooks::Batch(handler), ctx, a, ending).await,
            )
        }
        .instrument(span)
    }))
    .await;
    for (i, o) in settled {
        outcomes[i] = Some(o);
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Outcome::Unsettled("not settled".into())))
        .collect()
}

/// Runs `f` (a handler) while renewing `claims` (message id, token) every third of the
/// lease, so a handler that runs longer than the lease keeps its messages; when the
/// process dies the renewals stop and the claims lapse within one lease.
async fn renewing<F: std::future::Future>(deps: &Deps, claims: &[(&str, &str)], f: F) -> F::Output {
    if claims.is_empty() {
        return f.await;
    }
    let every = (deps.lease / 3).max(std::time::Duration::from_millis(10));
    tokio::pin!(f);
    loop {
        tokio::select! {
            out = &mut f => return out,
            _ = tokio::time::sleep(every) => {
                let renewals = claims.iter().map(|(id, token)| deps.dedupe.renew(id, token, deps.lease));
                for (r, (id, _)) in futures::future::join_all(renewals).await.into_iter().zip(claims) {
                    match r {
                        Ok(true) => {}
                        // Lapsed (a stall longer than the lease): another consumer may run it
                        // too; the database fence and the handler's own guards decide.
                        Ok(false) => tracing::warn!(id, "message claim lapsed while its handler ran"),
                        Err(e) => tracing::warn!(id, error = %e, "renewing a message claim failed"),
                    }
                }
            }
        }
    }
}

/// Runs a handler future, turning a panic into a transient failure (the message is
/// retried; the process lives on).
async fn guarded<T>(f: impl std::future::Future<Output = T>) -> Result<T, HandlerError> {
    AssertUnwindSafe(f).catch_unwind().await.map_err(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "handler panicked".to_owned());
        HandlerError::Transient(format!("panic: {what}"))
    })
}

/// A delivery cleared to run: decoded, claimed, not yet processed.
struct Admitted {
    delivery: Delivery,
    queue: crate::broker::topology::ResolvedQueue,
    envelope: Envelope,
    /// The dedupe claim's token (`None` when the dedupe store was down).
    token: Option<String>,
}

impl Admitted {
    /// (message id, claim token), when the dedupe store gave a claim.
    fn claim(&self) -> Option<(&str, &str)> {
        self.token
            .as_deref()
            .map(|t| (self.envelope.id.as_str(), t))
    }

    // The span instruments futures rather than being entered: an entered guard held
    // across awaits follows the task to other threads and corrupts the span stack
    // (seen as a tracing-subscriber panic, "tried to clone a span that already closed").
    fn span(&self) -> tracing::Span {
        let e = &self.envelope;
        tracing::info_span!("message", queue = %self.queue.spec.key, id = %e.id, kind = %e.kind, attempt = e.attempt)
    }
}

enum Admission {
    Run(Admitted),
    /// Redelivered after its consumer died this many times: dead-letter, do not run.
    Quarantine(Admitted, u32),
    /// Settled without running (malformed, duplicate, busy, or handed back).
    Settled(Outcome),
}

/// How a delivery's handling ended.
enum Ending {
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
enum Hooks<'a> {
    One(&'a dyn Handler),
    Batch(&'a dyn BatchHandler),
}

impl Hooks<'_> {
    async fn on_failure(
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

/// Decodes the body and claims the message id: the dedupe store first (if it is down,
/// the database fence still decides), then the fence.
async fn admit(deps: &Deps, delivery: Delivery) -> Admission {
    let queue = deps.broker.topology().queue(delivery.queue).clone();
    let envelope = match Envelope::decode(&delivery.body, deps.max_payload_bytes) {
        Ok(e) => e,
        Err(e) => {
            let id = dead_letters::malformed_id(&delivery.body);
            let info = DeadLetterInfo {
                reason: DeadReason::Malformed,
                origin_queue: queue.name.clone(),
                attempts: 0,
                last_error: e.to_string(),
            };
            tracing::warn!(queue = %queue.name, error = %e, "malformed message dead-lettered");
            let body = delivery.body.clone();
            return Admission::Settled(
                dead_letter(deps, delivery, body, &id, "unknown", &[], info).await,
            );
        }
    };
    let id = envelope.id.as_str();
    // Before the claim: a crash leaves the dead consumer's claim behind, and the message
    // must be counted each time it comes back, claimable or not.
    if delivery.redelivered && deps.crash_loop_after > 0 {
        match super::deaths::record(&deps.db, id, queue.spec.key).await {
            Ok(deaths) if deaths >= deps.crash_loop_after => {
                tracing::warn!(
                    id,
                    deaths,
                    "message keeps killing its consumers: quarantined"
                );
                return Admission::Quarantine(
                    Admitted {
                        delivery,
                        queue,
                        envelope,
                        token: None,
                    },
                    deaths,
                );
            }
            Ok(_) => {}
            // Counting is best effort; the message itself is not at risk.
            Err(e) => tracing::warn!(id, error = %e, "counting a redelivery failed"),
        }
    }
    let token = match deps.dedupe.claim(id, deps.lease).await {
        Ok((Claim::Done, _)) => {
            return Admission::Settled(settle_ack(delivery, Outcome::Duplicate).await);
        }
        Ok((Claim::InProgress, _)) => {
            // Never ack what someone else is processing: look again after the first tier.
            // The envelope is unchanged: send back the bytes as received.
            let body = delivery.body.clone();
            return Admission::Settled(match delivery.retry(0, body).await {
                Ok(()) => Outcome::Busy,
                Err(e) => Outcome::Unsettled(e.to_string()),
            });
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
            Admission::Settled(settle_ack(delivery, Outcome::Duplicate).await)
        }
        Ok(false) => Admission::Run(Admitted {
            delivery,
            queue,
            envelope,
            token,
        }),
        Err(e) => {
            // Cannot tell whether it ran: hand it back rather than risk a second effect.
            release(deps, id, token.as_deref()).await;
            delivery.requeue();
            Admission::Settled(Outcome::Unsettled(format!("fence check failed: {e}")))
        }
    }
}

/// Settles an admitted delivery from its handler's result: fenced and acked, retried on
/// the next tier, or dead-lettered.
async fn conclude(
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
    } = admitted;
    let id = envelope.id.as_str();
    let result = match ending {
        Ending::Handled(r) => r,
        Ending::Quarantined(deaths) => {
            let error = format!(
                "its consumer died {deaths} times while holding it (abort, OOM or crash); quarantined"
            );
            let fate = Fate::DeadLetter {
                reason: DeadReason::CrashLoop,
                error: error.clone(),
            };
            if let Err(hook) = hooks.on_failure(ctx, &envelope, &fate).await {
                delivery.requeue();
                return Outcome::Unsettled(format!("failure hook: {hook}"));
            }
            let info = DeadLetterInfo {
                reason: DeadReason::CrashLoop,
                origin_queue: queue.name.clone(),
                attempts: envelope.attempt + 1,
                last_error: error.clone(),
            };
            let failed = envelope.with_failure(&queue.name, &error);
            return dead_letter_envelope(deps, delivery, &failed, info).await;
        }
    };
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
            // Committed and fenced, not acked: the redelivery must change nothing.
            crate::crash_point!("consumer::before_ack");
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
            if let Err(hook) = hooks.on_failure(ctx, &envelope, &fate).await {
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
        Err(HandlerError::Deferred(why)) => {
            release(deps, id, token.as_deref()).await;
            tracing::debug!(reason = %why, "deferred");
            metrics::counter!("conveyor_messages_deferred_total", "queue" => queue.spec.key)
                .increment(1);
            // The envelope is unchanged (no attempt counted): send back the bytes as received.
            // On the second tier, not the first: a deferred backlog that came back every
            // second would fill the queue ahead of everyone else's messages.
            let body = delivery.body.clone();
            let tier = deps.broker.topology().retry_tier(&queue, 2);
            match delivery.retry(tier, body).await {
                Ok(()) => Outcome::Deferred,
                Err(err) => Outcome::Unsettled(err.to_string()),
            }
        }
        Err(HandlerError::Permanent(e)) => {
            release(deps, id, token.as_deref()).await;
            let fate = Fate::DeadLetter {
                reason: DeadReason::Permanent,
                error: e.clone(),
            };
            if let Err(hook) = hooks.on_failure(ctx, &envelope, &fate).await {
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
