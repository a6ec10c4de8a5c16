//! The `search.sync` message: which material changed, how, and its version then. The
//! consumer indexes the row as it is when the message is handled, so the message is a
//! hint; the version only names the change (and fences a delete whose row is gone).
//!
//! One message says one change (`{material_id, op, version}`) or several committed in one
//! transaction (`{"changes": [...]}`): the materials a commit wave of AI tasks makes go out
//! as one message, not one each (issue 63: a zero-duration task's second outbox row and
//! second broker message were this one). The consumer writes each change either way.

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

/// Changes committed together, as one message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Changes {
    changes: Vec<SyncMessage>,
}

/// What a `search.sync` payload may be.
#[derive(Deserialize)]
#[serde(untagged)]
enum Payload {
    One(SyncMessage),
    Many(Changes),
}

/// Changes per message at most: a commit wave is far smaller; a bound keeps a message
/// (and what one failure sends back to a retry tier) small whatever the caller.
pub const MAX_CHANGES: usize = 64;

impl SyncMessage {
    /// The envelope, with an id naming the change (material and version), so the same
    /// change announced twice is deduplicated by the consumer runtime.
    pub fn envelope(&self) -> Envelope {
        Envelope::new(KIND, serde_json::json!(self))
            .with_id(format!("sync:{}:{}", self.material_id, self.version))
            .with_correlation_id(self.material_id.clone())
    }

    /// One envelope for changes committed together (at most [`MAX_CHANGES`]; one change
    /// is [`SyncMessage::envelope`]). Its id names the first change and how many there
    /// are: a material's change is committed once, so no other set starts with it.
    pub fn envelope_of(changes: &[SyncMessage]) -> Option<Envelope> {
        match changes {
            [] => None,
            [one] => Some(one.envelope()),
            [first, ..] => Some(
                Envelope::new(
                    KIND,
                    serde_json::json!(Changes {
                        changes: changes.to_vec()
                    }),
                )
                .with_id(format!(
                    "sync:{}:{}+{}",
                    first.material_id,
                    first.version,
                    changes.len()
                ))
                .with_correlation_id(first.material_id.clone()),
            ),
        }
    }

    /// The changes a message says (one or several; never none).
    pub fn parse(envelope: &Envelope) -> Result<Vec<Self>, String> {
        if envelope.kind != KIND {
            return Err(format!("unexpected message kind `{}`", envelope.kind));
        }
        let changes = match serde_json::from_value(envelope.payload.clone()) {
            Ok(Payload::One(m)) => vec![m],
            Ok(Payload::Many(c)) => c.changes,
            Err(_) => {
                return Err(format!(
                    "bad search.sync payload: expected {{material_id, op, version}} or {{\"changes\": [...]}}, got {}",
                    envelope
                        .payload
                        .to_string()
                        .chars()
                        .take(200)
                        .collect::<String>()
                ));
            }
        };
        if changes.is_empty() {
            return Err("bad search.sync payload: `changes` is empty".into());
        }
        Ok(changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(id: &str, version: i64) -> SyncMessage {
        SyncMessage {
            material_id: id.into(),
            op: SyncOp::Upsert,
            version,
        }
    }

    #[test]
    fn one_change_or_several_read_back_as_sent() {
        let one = change("m1", 3);
        assert_eq!(
            SyncMessage::parse(&one.envelope()).unwrap(),
            vec![one.clone()]
        );
        let many = vec![one.clone(), change("m2", 1)];
        let env = SyncMessage::envelope_of(&many).unwrap();
        assert_eq!(env.id, "sync:m1:3+2");
        assert_eq!(SyncMessage::parse(&env).unwrap(), many);
        assert_eq!(
            SyncMessage::envelope_of(&many[..1]).unwrap().id,
            "sync:m1:3"
        );
        assert!(SyncMessage::envelope_of(&[]).is_none());
    }

    #[test]
    fn a_payload_that_is_neither_form_is_refused_with_a_reason() {
        for bad in [
            serde_json::json!({ "changes": [] }),
            serde_json::json!({ "changes": [{ "material_id": "m", "op": "upsert" }] }),
            serde_json::json!({ "material_id": "m", "op": "upsert", "version": 1, "extra": 1 }),
            serde_json::json!([1, 2]),
        ] {
            let err = SyncMessage::parse(&Envelope::new(KIND, bad.clone())).unwrap_err();
            assert!(err.starts_with("bad search.sync payload"), "{bad}: {err}");
        }
    }
}
