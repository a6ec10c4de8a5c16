//! One delivery (or one batch of them), start to settle: admission (`admit`: decode,
//! claim, fence check), the handler, settlement (`settle`: each message from its own
//! result).

use std::panic::AssertUnwindSafe;

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt as _, StreamExt as _};
use tracing::Instrument as _;

use super::admit::{Admission, Admitted, admit, admit_many};
use super::answers::{Answer, Answers, collect};
use super::settle::{Ending, Hooks, conclude, conclude_successes};
use super::{BatchHandler, Context, Deps, Handler, HandlerError};
use crate::broker::{DeadReason, Delivery, Envelope};

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
    let admitted = match admit(deps, Hooks::One(handler).fencing(), delivery).await {
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

/// Processes a batch of deliveries of one queue: admitted together (one claim round
/// trip), the handler runs once for all admitted ones, and each is settled from its own
/// answer as soon as the handler gives it, so one message's failure never fails its
/// neighbours and a quick message is acked while slow ones still run. Answers given
/// together are settled together: one fence write, one dedupe call, coalesced acks. If
/// the call fails as a whole (a panic) or leaves messages unanswered, each of those runs
/// again alone. Outcomes come back in the order of `deliveries`.
pub async fn process_batch(
    deps: &Deps,
    handler: &dyn BatchHandler,
    deliveries: Vec<Delivery>,
) -> Vec<Outcome> {
    let Some(queue) = deliveries.first().map(|d| d.queue) else {
        return Vec::new();
    };
    let admissions = admit_many(deps, handler.fencing(), deliveries).await;
    let mut outcomes: Vec<Option<Outcome>> = admissions.iter().map(|_| None).collect();
    let ctx = deps.context(queue);
    let hooks = Hooks::Batch(handler);
    let mut settling: FuturesUnordered<Settling<'_>> = FuturesUnordered::new();
    // The messages given to the handler: their place in `outcomes` and what settles
    // them, taken out when their answer arrives. The handler reads copies of the
    // envelopes, so a message can be settled while the call still runs.
    let mut held: Vec<Option<(usize, Admitted)>> = Vec::new();
    for (i, a) in admissions.into_iter().enumerate() {
        match a {
            Admission::Run(a) => held.push(Some((i, a))),
            Admission::Quarantine(a, deaths) => settling.push(settle_failure(
                deps,
                hooks,
                &ctx,
                i,
                a,
                Ending::Quarantined(deaths),
            )),
            Admission::Settled(o) => outcomes[i] = Some(o),
        }
    }
    if !held.is_empty() {
        let envelopes: Vec<Envelope> = held.iter().flatten().map(|(_, a)| a.handed()).collect();
        let span = tracing::info_span!("batch", otel.name = %format_args!("process {} batch", queue.key), otel.kind = "consumer", queue = %queue.key, size = envelopes.len());
        // A batch belongs to many traces: linked to each (the handler's own spans, such
        // as an AI step's, are children of their message's).
        for e in &envelopes {
            crate::traces::link(&span, e.traceparent.as_deref());
        }
        let (answers, mut rx) = Answers::new(envelopes.len());
        let call = guarded(handler.handle_streaming(&ctx, &envelopes, &answers)).instrument(span);
        tokio::pin!(call);
        let every = renew_every(deps);
        let mut renew_at = tokio::time::Instant::now() + every;
        let whole = loop {
            tokio::select! {
                ended = &mut call => break ended.err().map(|e| e.to_string()),
                Some(first) = rx.recv() => {
                    let mut given = vec![first];
                    given.extend(Answers::drain(&mut rx));
                    settle_answers(deps, hooks, &ctx, &mut held, given, &mut settling);
                }
                Some(done) = settling.next(), if !settling.is_empty() => {
                    for (i, o) in done {
                        outcomes[i] = Some(o);
                    }
                }
                _ = tokio::time::sleep_until(renew_at) => {
                    renew_at += every;
                    renew(deps, held.iter().flatten().filter_map(|(_, a)| a.claim())).await;
                }
            }
        };
        settle_answers(
            deps,
            hooks,
            &ctx,
            &mut held,
            Answers::drain(&mut rx),
            &mut settling,
        );
        // What the call left unanswered runs again, one message at a time.
        let unanswered: Vec<usize> = (0..held.len()).filter(|&k| held[k].is_some()).collect();
        if !unanswered.is_empty() {
            let why = whole.unwrap_or_else(|| "batch handler gave no answer".to_owned());
            let alone = envelopes.len() == 1;
            if !alone {
                tracing::warn!(size = envelopes.len(), unanswered = unanswered.len(), error = %why, "running unanswered messages of a batch one by one");
            }
            for k in unanswered {
                let result = if alone {
                    Err(HandlerError::Transient(why.clone()))
                } else {
                    let claim: Vec<_> = held[k].iter().filter_map(|(_, a)| a.claim()).collect();
                    renewing(deps, &claim, run_alone(handler, &ctx, &envelopes[k])).await
                };
                settle_answers(
                    deps,
                    hooks,
                    &ctx,
                    &mut held,
                    vec![(k, result)],
                    &mut settling,
                );
            }
        }
    }
    while let Some(done) = settling.next().await {
        for (i, o) in done {
            outcomes[i] = Some(o);
        }
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Outcome::Unsettled("not settled".into())))
        .collect()
}

/// The settlement of some messages of a batch: (place in the batch, outcome).
type Settling<'a> = BoxFuture<'a, Vec<(usize, Outcome)>>;

/// Starts settling the answers `given` (by index into `held`): the successes together,
/// each failure on its own.
fn settle_answers<'a>(
    deps: &'a Deps,
    hooks: Hooks<'a>,
    ctx: &'a Context,
    held: &mut [Option<(usize, Admitted)>],
    given: Vec<Answer>,
    settling: &mut FuturesUnordered<Settling<'a>>,
) {
    let mut successes = Vec::new();
    for (k, result) in given {
        let Some((i, a)) = held.get_mut(k).and_then(Option::take) else {
            continue;
        };
        match result {
            Ok(()) => successes.push((i, a)),
            failed => settling.push(settle_failure(deps, hooks, ctx, i, a, failed.into())),
        }
    }
    if successes.is_empty() {
        return;
    }
    let fencing = hooks.fencing();
    settling.push(Box::pin(async move {
        let (places, done): (Vec<usize>, Vec<Admitted>) = successes.into_iter().unzip();
        let acked = conclude_successes(deps, fencing, done).await;
        places.into_iter().zip(acked).collect()
    }));
}

fn settle_failure<'a>(
    deps: &'a Deps,
    hooks: Hooks<'a>,
    ctx: &'a Context,
    i: usize,
    a: Admitted,
    ending: Ending,
) -> Settling<'a> {
    let span = a.span();
    Box::pin(async move { vec![(i, conclude(deps, hooks, ctx, a, ending).await)] }.instrument(span))
}

/// Runs the batch handler on one message (after its batch's call failed as a whole).
async fn run_alone(
    handler: &dyn BatchHandler,
    ctx: &Context,
    envelope: &Envelope,
) -> Result<(), HandlerError> {
    match guarded(collect(handler, ctx, std::slice::from_ref(envelope))).await {
        Ok(mut r) => r.pop().flatten().unwrap_or_else(|| {
            Err(HandlerError::Transient(
                "batch handler gave no answer for the message".to_owned(),
            ))
        }),
        Err(e) => Err(e),
    }
}

/// Runs `f` (a handler) while renewing `claims` (message id, token) every third of the
/// lease, so a handler that runs longer than the lease keeps its messages; when the
/// process dies the renewals stop and the claims lapse within one lease.
async fn renewing<F: std::future::Future>(deps: &Deps, claims: &[(&str, &str)], f: F) -> F::Output {
    if claims.is_empty() {
        return f.await;
    }
    let every = renew_every(deps);
    tokio::pin!(f);
    loop {
        tokio::select! {
            out = &mut f => return out,
            _ = tokio::time::sleep(every) => renew(deps, claims.iter().copied()).await,
        }
    }
}

/// How often running messages' claims are renewed: every third of the lease.
fn renew_every(deps: &Deps) -> std::time::Duration {
    (deps.lease / 3).max(std::time::Duration::from_millis(10))
}

/// Renews the claims (message id, token) of messages whose handler still runs.
async fn renew<'a>(deps: &Deps, claims: impl Iterator<Item = (&'a str, &'a str)>) {
    let claims: Vec<(&str, &str)> = claims.collect();
    let renewals = claims
        .iter()
        .map(|(id, token)| deps.dedupe.renew(id, token, deps.lease));
    for (r, (id, _)) in futures::future::join_all(renewals)
        .await
        .into_iter()
        .zip(&claims)
    {
        match r {
            Ok(true) => {}
            // Lapsed (a stall longer than the lease): another consumer may run it too;
            // the database fence and the handler's own guards decide.
            Ok(false) => tracing::warn!(id, "message claim lapsed while its handler ran"),
            Err(e) => tracing::warn!(id, error = %e, "renewing a message claim failed"),
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
