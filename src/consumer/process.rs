//! One delivery (or one batch of them), start to settle: admission (`admit`: decode,
//! claim, fence check), the handler, settlement (`settle`: each message from its own
//! result).

use std::panic::AssertUnwindSafe;

use futures::FutureExt as _;
use tracing::Instrument as _;

use super::admit::{Admission, Admitted, admit, admit_many};
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

/// Processes a batch of deliveries of one queue: admitted together (one claim round
/// trip), the handler runs once for all admitted ones, and each is settled from its own
/// result, so one message's failure never fails its neighbours (a failure of the whole
/// call runs each message again alone). The successes are settled together: one fence
/// write, one dedupe call, coalesced acks. Outcomes come back in the order of
/// `deliveries`.
pub async fn process_batch(
    deps: &Deps,
    handler: &dyn BatchHandler,
    deliveries: Vec<Delivery>,
) -> Vec<Outcome> {
    let Some(queue) = deliveries.first().map(|d| d.queue) else {
        return Vec::new();
    };
    let admissions = admit_many(deps, deliveries).await;
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
    let mut successes: Vec<(usize, Admitted)> = Vec::new();
    if !envelopes.is_empty() {
        let n = envelopes.len();
        let span = tracing::info_span!("batch", queue = %queue.key, size = n);
        let claims: Vec<(&str, &str)> = held
            .iter()
            .zip(&envelopes)
            .filter_map(|((_, _, _, token), e)| token.as_deref().map(|t| (e.id.as_str(), t)))
            .collect();
        let results = renewing(deps, &claims, run_batch(handler, &ctx, &envelopes))
            .instrument(span)
            .await;
        for (((i, delivery, queue, token), envelope), result) in
            held.into_iter().zip(envelopes).zip(results)
        {
            let a = Admitted {
                delivery,
                queue,
                envelope,
                token,
            };
            match result {
                Ok(()) => successes.push((i, a)),
                failed => endings.push((i, a, failed.into())),
            }
        }
    }
    let (places, done): (Vec<usize>, Vec<Admitted>) = successes.into_iter().unzip();
    let acked = conclude_successes(deps, handler.fences_itself(), done);
    let failed = futures::future::join_all(endings.into_iter().map(|(i, a, ending)| {
        let span = a.span();
        let ctx = &ctx;
        async move {
            (
                i,
                conclude(deps, Hooks::Batch(handler), ctx, a, ending).await,
            )
        }
        .instrument(span)
    }));
    let (acked, failed) = futures::join!(acked, failed);
    for (i, o) in places.into_iter().zip(acked).chain(failed) {
        outcomes[i] = Some(o);
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Outcome::Unsettled("not settled".into())))
        .collect()
}

/// Runs the batch handler on `envelopes`, one result per message. If the call as a
/// whole fails (a panic, a wrong number of answers), each message is run again alone,
/// so the one at fault fails and its neighbours do not; the handler is idempotent, so
/// what the failed call committed is not done twice.
async fn run_batch(
    handler: &dyn BatchHandler,
    ctx: &Context,
    envelopes: &[Envelope],
) -> Vec<Result<(), HandlerError>> {
    let n = envelopes.len();
    let whole = match guarded(handler.handle_batch(ctx, envelopes)).await {
        Ok(r) if r.len() == n => return r,
        Ok(r) => format!(
            "batch handler answered {} results for {n} messages",
            r.len()
        ),
        Err(e) => e.to_string(),
    };
    if n == 1 {
        return vec![Err(HandlerError::Transient(whole))];
    }
    tracing::warn!(size = n, error = %whole, "batch failed as a whole; running its messages one by one");
    let mut results = Vec::with_capacity(n);
    for one in envelopes.chunks(1) {
        results.push(match guarded(handler.handle_batch(ctx, one)).await {
            Ok(mut r) if r.len() == 1 => r.pop().unwrap_or(Ok(())),
            Ok(r) => Err(HandlerError::Transient(format!(
                "batch handler answered {} results for 1 message",
                r.len()
            ))),
            Err(e) => Err(e),
        });
    }
    results
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
