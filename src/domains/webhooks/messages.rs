//! The `webhooks.deliver` message: which delivery to attempt, and how many attempts it
//! had when the message was made. The id names both, so the same attempt announced
//! twice is deduplicated by the consumer runtime, and a message whose attempt count is
//! no longer the delivery's (it moved on) changes nothing.

use serde::{Deserialize, Serialize};

use crate::broker::Envelope;

pub const KIND: &str = "webhook.deliver";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deliver {
    pub delivery_id: String,
    /// Attempts made before this one.
    pub attempts: i32,
}

impl Deliver {
    pub fn envelope(&self) -> Envelope {
        Envelope::new(KIND, serde_json::json!(self))
            .with_id(format!("whd:{}:{}", self.delivery_id, self.attempts))
            .with_correlation_id(self.delivery_id.clone())
    }

    /// A retry by hand: an id of its own (the attempt's own message may have been
    /// handled already, for a delivery ended without an attempt).
    pub fn manual_envelope(&self) -> Envelope {
        // At most 64 characters, as every message id.
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let id = format!("whm:{}:{}:{}", self.delivery_id, self.attempts, &nonce[..8]);
        self.envelope().with_id(id)
    }

    pub fn parse(envelope: &Envelope) -> Result<Self, String> {
        if envelope.kind != KIND {
            return Err(format!("unexpected message kind `{}`", envelope.kind));
        }
        serde_json::from_value(envelope.payload.clone())
            .map_err(|e| format!("bad webhook.deliver payload: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_fit_the_64_characters_every_message_id_has() {
        let d = Deliver {
            delivery_id: uuid::Uuid::now_v7().to_string(),
            attempts: 99_999,
        };
        assert!(d.envelope().id.len() <= 64);
        assert!(d.manual_envelope().id.len() <= 64);
        assert_ne!(d.manual_envelope().id, d.manual_envelope().id);
    }
}
