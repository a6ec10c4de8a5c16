//! The `search.sync` message: which material changed, how, and its version then. The
//! consumer indexes the row as it is when the message is handled, so the message is a
//! hint; the version only names the change (and fences a delete whose row is gone).

use serde::{Deserialize, Serialize};

use crate::broker::Envelope;

pub const KIND: &str = "search.sync";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncOp {
    Upsert,
    Delete,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncMessage {
    pub material_id: String,
    pub op: SyncOp,
    pub version: i64,
}

impl SyncMessage {
    /// The envelope, with an id naming the change (material and version), so the same
    /// change announced twice is deduplicated by the consumer runtime.
    pub fn envelope(&self) -> Envelope {
        Envelope::new(KIND, serde_json::json!(self))
            .with_id(format!("sync:{}:{}", self.material_id, self.version))
            .with_correlation_id(self.material_id.clone())
    }

    pub fn parse(envelope: &Envelope) -> Result<Self, String> {
        if envelope.kind != KIND {
            return Err(format!("unexpected message kind `{}`", envelope.kind));
        }
        serde_json::from_value(envelope.payload.clone())
            .map_err(|e| format!("bad search.sync payload: {e}"))
    }
}
