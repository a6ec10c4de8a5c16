//! Accepting a verified webhook: the steps every provider shares once its signature
//! verified. The event id is checked, the payment looked up, the claim checked against
//! it, and the event recorded in the inbox with its apply message (group-committed with
//! concurrent deliveries); each provider's route answers the verdict in its own format.

use super::metrics;
use super::recorder::Recorder;
use super::service::Payments;
use super::store::{self, Incoming, Kind, Payment};
use super::verify::Refused;
use crate::outbox::OutboxError;

/// What a verified event claims: which payment, what happened, the payment's total as
/// the event states it (if it does) and the currency.
pub struct Claim<'a> {
    pub provider: &'static str,
    /// The inbox key: the notification's id, or a refund's identity ([`refund_key`]).
    pub event_id: &'a str,
    pub out_trade_no: &'a str,
    pub kind: Kind,
    pub total: Option<i64>,
    pub currency: &'a str,
}

/// What became of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// In the inbox (now, or before: a redelivery).
    Recorded,
    UnknownPayment,
    /// Amount or currency not the payment's (logged and counted).
    Mismatch,
    /// Refused before the database (logged and counted).
    Malformed(&'static str),
}

/// The inbox key of a refund: its identity at the provider, within its payment (a
/// provider's refund number need only be unique per trade), so one refund re-sent under
/// a new notification id is recorded (and applied) once, and two payments' refunds
/// numbered alike stay two.
pub fn refund_key(out_trade_no: &str, refund_id: &str) -> String {
    format!("refund:{out_trade_no}:{refund_id}")
}

impl Claim<'_> {
    /// A paid event states the payment's total; a refund gives back at most what was paid;
    /// the currency is the payment's.
    fn fits(&self, p: &Payment) -> bool {
        let amount_ok = match self.kind {
            Kind::Paid => self.total == Some(p.amount),
            Kind::Refund(r) | Kind::RefundTotal(r) => {
                r > 0 && r <= p.amount && self.total.is_none_or(|t| t == p.amount)
            }
        };
        amount_ok && self.currency == p.currency
    }
}

/// Logs and counts a refused webhook (the reason only, never the body).
pub fn note_refused(provider: &'static str, why: &Refused) {
    tracing::warn!(provider, reason = why.reason(), "webhook refused");
    metrics::webhook(provider, why.reason());
}

/// Logs and counts an event that does not match its payment.
pub fn note_mismatch(provider: &'static str, event: &str, payment: &str) {
    tracing::warn!(
        provider,
        event,
        payment,
        "webhook does not match its payment"
    );
    metrics::webhook(provider, "mismatch");
}

impl Payments {
    /// Records a verified claim, through `recorder` (the API process's group commit).
    pub async fn accept(
        &self,
        recorder: &Recorder,
        claim: Claim<'_>,
    ) -> Result<Verdict, OutboxError> {
        let malformed = |why: &'static str| {
            note_refused(claim.provider, &Refused::Malformed(why));
            Ok(Verdict::Malformed(why))
        };
        if claim.event_id.is_empty() {
            return malformed("no event id");
        }
        if claim.event_id.len() > store::MAX_EVENT_ID {
            // Never recordable: a clear refusal, not a 500 the provider would retry for days.
            return malformed("event id longer than 128 characters");
        }
        let Some(payment) = store::get(&self.db, claim.out_trade_no).await? else {
            metrics::webhook(claim.provider, "unknown_payment");
            return Ok(Verdict::UnknownPayment);
        };
        if !claim.fits(&payment) {
            note_mismatch(claim.provider, claim.event_id, &payment.id);
            return Ok(Verdict::Mismatch);
        }
        let incoming = Incoming {
            provider: claim.provider,
            event_id: claim.event_id.to_owned(),
            payment_id: payment.id,
            kind: claim.kind,
        };
        let fresh = recorder.write(incoming).await?;
        metrics::webhook(claim.provider, if fresh { "accepted" } else { "duplicate" });
        Ok(Verdict::Recorded)
    }
}
