//! Admission: a delivery is decoded, counted if it came back from a dead consumer,
//! claimed in the dedupe store and checked against the database fence before its handler
//! may run. [`admit`] does it for one delivery, [`admit_many`] for a batch with one claim
//! round trip.

pub(super) use super::admitted::Admitted;
use super::settle::{dead_letter, release, settle_ack};
use super::{Deps, Outcome};
use crate::broker::{DeadLetterInfo, DeadReason, Delivery, Envelope};
use crate::dead_letters;
use crate::dedupe::{Claim, DedupeError};

pub(super) enum Admission {
    Run(Admitted),
    /// Redelivered after its consumer died this many times: dead-letter, do not run.
    Quarantine(Admitted, u32),
    /// Settled without running (malformed, duplicate, busy, or handed back).
    Settled(Outcome),
}

/// Admits one delivery.
pub(super) async fn admit(deps: &Deps, delivery: Delivery) -> Admission {
    let a = match decode(deps, delivery).await {
        Ok(a) => a,
        Err(settled) => return settled,
    };
    let claim = deps.dedupe.claim(&a.envelope.id, deps.lease).await;
    claimed(deps, a, claim).await
}

/// Admits a batch: each delivery decoded on its own, all claims in one call to the
/// dedupe store, the fence checks batched by the fence reader. In the order given.
pub(super) async fn admit_many(deps: &Deps, deliveries: Vec<Delivery>) -> Vec<Admission> {
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
    futures::future::join_all(pending.into_iter().map(|p| async move {
        match p {
            Ok((a, claim)) => claimed(deps, a, claim).await,
            Err(settled) => settled,
        }
    }))
    .await
}

/// Decodes the body; dead-letters a malformed one, quarantines one that keeps killing
/// its consumers. The result is not claimed yet.
async fn decode(deps: &Deps, delivery: Delivery) -> Result<Admitted, Admission> {
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
            return Err(Admission::Settled(
                dead_letter(deps, delivery, body, &id, "unknown", &[], info).await,
            ));
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
                return Err(Admission::Quarantine(
                    Admitted {
                        delivery,
                        queue,
                        envelope,
                        token: None,
                    },
                    deaths,
                ));
            }
            Ok(_) => {}
            // Counting is best effort; the message itself is not at risk.
            Err(e) => tracing::warn!(id, error = %e, "counting a redelivery failed"),
        }
    }
    Ok(Admitted {
        delivery,
        queue,
        envelope,
        token: None,
    })
}

/// Admits a decoded delivery given its claim: the dedupe store first (if it is down,
/// the database fence still decides), then the fence.
async fn claimed(
    deps: &Deps,
    mut a: Admitted,
    claim: Result<(Claim, String), DedupeError>,
) -> Admission {
    let token = match claim {
        Ok((Claim::Done, _)) => {
            return Admission::Settled(settle_ack(a.delivery, Outcome::Duplicate).await);
        }
        Ok((Claim::InProgress, _)) => {
            // Never ack what someone else is processing: look again after the first tier.
            // The envelope is unchanged: send back the bytes as received.
            let body = a.delivery.body.clone();
            return Admission::Settled(match a.delivery.retry(0, body).await {
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
    let id = a.envelope.id.as_str();
    let fenced = match &deps.fence {
        Some(fence) => fence.is_processed(id).await,
        None => Ok(false),
    };
    match fenced {
        Ok(true) => {
            let _ = deps.dedupe.complete(id, deps.done_ttl).await;
            Admission::Settled(settle_ack(a.delivery, Outcome::Duplicate).await)
        }
        Ok(false) => {
            a.token = token;
            Admission::Run(a)
        }
        Err(e) => {
            // Cannot tell whether it ran: hand it back rather than risk a second effect.
            release(deps, id, token.as_deref()).await;
            a.delivery.requeue();
            Admission::Settled(Outcome::Unsettled(format!("fence check failed: {e}")))
        }
    }
}
