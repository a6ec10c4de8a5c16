//! The payments flow's message: `payments.apply`, one per recorded inbox event.

use serde::{Deserialize, Serialize};

use super::queues::PAYMENTS_APPLY;
use crate::broker::{Envelope, Target};
use crate::consumer::HandlerError;

/// Envelope kind of an apply message.
pub const APPLY_EVENT: &str = "payments.event.apply";

/// `{"event": <inbox row id>}`: apply this recorded event (once, whoever applies it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplyMessage {
    pub event: i64,
}

impl ApplyMessage {
    /// The message for the outbox, correlated with its payment.
    pub fn outgoing(self, payment_id: &str) -> (Target, Envelope) {
        let payload = serde_json::json!(self);
        let envelope = Envelope::new(APPLY_EVENT, payload).with_correlation_id(payment_id);
        (Target::Queue(&PAYMENTS_APPLY), envelope)
    }

    /// Read from a delivered envelope; a payload of another shape is permanent (the
    /// dead-letter queue, with the reason).
    pub fn from_envelope(envelope: &Envelope) -> Result<Self, HandlerError> {
        serde_json::from_value(envelope.payload.clone())
            .map_err(|e| HandlerError::permanent(format!("payments.apply payload: {e}")))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_apply_message_round_trips_and_refuses_other_shapes() {
        let (_, env) = ApplyMessage { event: 42 }.outgoing("pay_1");
        assert_eq!(env.kind, APPLY_EVENT);
        assert_eq!(env.correlation_id.as_deref(), Some("pay_1"));
        assert_eq!(ApplyMessage::from_envelope(&env).unwrap().event, 42);
        for bad in [
            serde_json::json!({"event": "42"}),
            serde_json::json!({}),
            serde_json::json!({"event": 1, "x": 2}),
        ] {
            let e = Envelope::new(APPLY_EVENT, bad);
            assert!(ApplyMessage::from_envelope(&e).is_err());
        }
    }
}
