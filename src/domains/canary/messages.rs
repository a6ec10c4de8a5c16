//! The `canary.ping` message: which ping, and when it left.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::broker::Envelope;

pub const KIND: &str = "canary.ping";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ping {
    pub ping_id: String,
    pub sent_at: DateTime<Utc>,
}

impl Ping {
    /// The envelope, with the ping's id as the message id (a re-sent ping is the same).
    pub fn envelope(&self) -> Envelope {
        Envelope::new(KIND, serde_json::json!(self)).with_id(self.ping_id.clone())
    }

    pub fn parse(envelope: &Envelope) -> Result<Self, String> {
        if envelope.kind != KIND {
            return Err(format!("unexpected message kind `{}`", envelope.kind));
        }
        serde_json::from_value(envelope.payload.clone())
            .map_err(|e| format!("bad canary.ping payload: {e}"))
    }
}
