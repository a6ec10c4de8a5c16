//! Admission: a delivery is decoded, counted if it came back from a dead consumer,
//! claimed in the dedupe store and checked against the database fence before its handler
//! may run. [`admit_many`] does it for a batch with one claim round trip and one fence
//! request, [`admit`] for one delivery.

pub(super) use super::admitted::Admitted;
use super::settle::{dead_letter, release, settle_ack};
use super::{Deps, Fencing, Outcome};
use crate::broker::{DeadLetterInfo, DeadReason, Delivery, Envelope};
use crate::dead_letters;
use crate::dedupe::{Claim, DedupeError};
use std::collections::HashSet;

pub(super) enum Admission {
    Run(Admitted),
    /// Redelivered after its consumer died this many times: dead-letter, do not run.
    Quarantine(Admitted, u32),
    /// Settled without running (malformed, duplicate, busy, or handed back).
    Settled(Outcome),
}

/// Admits one delivery for a handler fenced as `fencing`: a batch of one (the same
/// round trips as one claim and one fence check).
pub(super) async fn admit(deps: &Deps, fencing: Fencing, delivery: Delivery) -> Admission {
    admit_many(deps, fencing, vec![delivery])
        .await
        .pop()
        .unwrap_or_else(|| Admission::Settled(Outcome::Unsettled("not admitted".into())))
}

/// Admits a batch: each delivery decoded on its own, all claims in one call to the
/// dedupe store, the fence checked for all claimed ones in one request. In the order
/// given.
pub(super) async fn admit_many(
    deps: &Deps,
    fencing: Fencing,
    deliveries: Vec<Delivery>,
) -> Vec<Admission> {
    let decoded = futures::future::join_all(deliveries.into_iter().map(|d| decode(deps, d))).await;
    let ids: Vec<&str> = decoded
        .iter()
        .filter_map(|d| d.as_ref().ok())
        .map(|a| a.envelope.id.as_str())
        .collect();
    // One answer per decoded delivery; if the store is down, each gets its error (the
    // fence still decides).
    let claims: Vec<Result<(Claim, String), DedupeError>> =
        match deps.dedupe.claim_many(&ids, deps.lease).await {
            Ok(c) => c.into_iter().map(Ok).collect(),
            Err(DedupeError::Unavailable(e)) => ids
                .iter()
                .map(|_| Err(DedupeError::Unavailable(e.clone())))
                .collect(),
        };
    let mut claims = claims.into_iter();
    let pending: Vec<_> = decoded
        .into_iter()
        .map(|d| {
            d.map(|a| {
                let claim = claims.next().unwrap_or_else(|| {
                    Err(DedupeError::Unavailable("claim answer missing".into()))
                });
                (a, claim)
            })
        })
        .collect();
    let claimed = futures::future::join_all(pending.into_iter().map(|p| async move {
        match p {
            Ok((a, claim)) => claimed(a, claim).await,
            Err(settled) => Claimed::Settled(*settled),
        }
    }))
    .await;
    let to_check: Vec<&Admitted> = claimed
        .iter()
        .filter_map(|c| match c {
            Claimed::Check(a) => Some(a),
            Claimed::Settled(_) => None,
        })
        .collect();
    let found = check(deps, fencing, &to_check).await;
    futures::future::join_all(claimed.into_iter().map(|c| {
        let found = &found;
        async move {
            match c {
                Claimed::Settled(settled) => settled,
                Claimed::Check(a) => fenced(deps, a, found).await,
            }
        }
    }))
    .await
}

/// Decodes the body; dead-letters a malformed one, quarantines one that keeps killing
/// its consumers. The result is not claimed yet.
/// The refusal is boxed: an [`Admission`] carries a whole delivery, and most decodes
/// succeed.
async fn decode(deps: &Deps, delivery: Delivery) -> Result<Admitted, Box<Admission>> {
    let queue = deps.broker.topology().queue(delivery.queue).clone();
    let envelope = match Envelope::decode(&delivery.body, deps.max_payload_bytes) {
        Ok(mut e) => {
            // A foreign publisher may send its trace as the AMQP header only.
            if e.traceparent.is_none() {
                e.traceparent = delivery.traceparent.clone();
            }
            e
        }
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
            return Err(Box::new(Admission::Settled(
                dead_letter(deps, delivery, body, &id, "unknown", &[], info).await,
            )));
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
                return Err(Box::new(Admission::Quarantine(
                    Admitted::new(delivery, queue, envelope),
                    deaths,
                )));
            }
            Ok(_) => {}
            // Counting is best effort; the message itself is not at risk.
            Err(e) => tracing::warn!(id, error = %e, "counting a redelivery failed"),
        }
    }
    Ok(Admitted::new(delivery, queue, envelope))
}

/// A delivery after its dedupe claim.
enum Claimed {
    /// Settled by the claim (a duplicate, or someone else's work in progress).
    Settled(Admission),
    /// Ours to run unless the fence says it already ran; `token` holds the claim's,
    /// `None` when the dedupe store was down.
    Check(Admitted),
}

/// Settles what the dedupe store's answer decides; if the store is down, the database
/// fence still decides.
async fn claimed(mut a: Admitted, claim: Result<(Claim, String), DedupeError>) -> Claimed {
    match claim {
        Ok((Claim::Done, _)) => Claimed::Settled(Admission::Settled(
            settle_ack(a.delivery, Outcome::Duplicate).await,
        )),
        Ok((Claim::InProgress, _)) => {
            // Never ack what someone else is processing: look again after the first tier.
            // The envelope is unchanged: send back the bytes as received.
            let body = a.delivery.body.clone();
            Claimed::Settled(Admission::Settled(match a.delivery.retry(0, body).await {
                Ok(()) => Outcome::Busy,
                Err(e) => Outcome::Unsettled(e.to_string()),
            }))
        }
        Ok((Claim::Acquired, token)) => {
            a.token = Some(token);
            Claimed::Check(a)
        }
        Err(e) => {
            tracing::warn!(error = %e, "dedupe store unavailable; relying on the database fence");
            Claimed::Check(a)
        }
    }
}

/// The ids among `admitted` that have a fence row, in one request: none when the
/// handler's own state fences its messages.
async fn check(
    deps: &Deps,
    fencing: Fencing,
    admitted: &[&Admitted],
) -> Result<HashSet<String>, String> {
    match deps.fence_to_read(fencing) {
        Some(fence) => {
            let ids: Vec<&str> = admitted.iter().map(|a| a.envelope.id.as_str()).collect();
            fence.processed(&ids).await
        }
        None => Ok(HashSet::new()),
    }
}

/// Admits a claimed delivery given the fence's answer for its batch.
async fn fenced(deps: &Deps, a: Admitted, found: &Result<HashSet<String>, String>) -> Admission {
    let id = a.envelope.id.as_str();
    match found {
        Ok(found) if found.contains(id) => {
            let _ = deps.dedupe.complete(id, deps.done_ttl).await;
            Admission::Settled(settle_ack(a.delivery, Outcome::Duplicate).await)
        }
        Ok(_) => Admission::Run(a),
        Err(e) => {
            // Cannot tell whether it ran: hand it back rather than risk a second effect.
            release(deps, id, a.token.as_deref()).await;
            a.delivery.requeue();
            Admission::Settled(Outcome::Unsettled(format!("fence check failed: {e}")))
        }
    }
}
