//! The message envelope: conveyor's wire format.
//!
//! Every message body is one UTF-8 JSON object (content type `application/json`):
//!
//! ```json
//! {
//!   "id": "0193a8f0-7c1e-7d2a-9a57-3f1c2b4d5e6f",   // unique; the dedupe key (1-64 chars)
//!   "kind": "ai.task.run",                            // what the payload is (1-128 chars)
//!   "attempt": 0,                                     // 0 on first delivery, +1 per retry
//!   "created_at": "2026-12-02T12:00:00Z",             // RFC 3339
//!   "correlation_id": "req-42",                       // optional: request or task id
//!   "traceparent": "00-4bf9…4736-00f0…02b7-01",      // optional: W3C trace context
//!   "payload": { "task_id": "…" },                    // small JSON: ids and parameters
//!   "failures": [ { "attempt": 0, "queue": "…", "error": "…", "at": "…" } ]  // optional
//! }
//! ```
//!
//! A service in another language publishes a valid message by sending such an object,
//! persistent, to the work exchange `<ns>.work` with the work queue's name as routing key.
//! To join a trace it sets `traceparent` (in the body, or as the AMQP header of that
//! name; the body wins): the consumer's spans become children of that span.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// How many failures an envelope remembers (the oldest are dropped).
const MAX_FAILURES: usize = 10;
/// Error texts are cut to this length in the history.
const MAX_ERROR_LEN: usize = 2000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    pub id: String,
    pub kind: String,
    #[serde(default)]
    pub attempt: u32,
    pub created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// The W3C trace context of the span that sent it (traces on), kept across retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    pub payload: serde_json::Value,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<Failure>,
}

/// One failed attempt, carried along retries and into the dead-letter queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub attempt: u32,
    pub queue: String,
    pub error: String,
    pub at: DateTime<Utc>,
    /// The consumer instance it failed in (`host:pid:run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<String>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EnvelopeError {
    #[error("message body is not a valid envelope: {0}")]
    Malformed(String),
    #[error(
        "message is {size} bytes, above the {limit}-byte limit (payloads carry ids, not blobs)"
    )]
    TooLarge { size: usize, limit: usize },
}

impl Envelope {
    /// A new envelope with a time-ordered UUIDv7 id.
    pub fn new(kind: impl Into<String>, payload: serde_json::Value) -> Self {
        Envelope {
            id: Uuid::now_v7().to_string(),
            kind: kind.into(),
            attempt: 0,
            created_at: Utc::now(),
            correlation_id: None,
            // The span it is created in sends it (a request, a step).
            traceparent: crate::traces::current(),
            payload,
            failures: Vec::new(),
        }
    }

    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// This envelope sent in the trace `traceparent` names, when there is one (a message
    /// made outside the span that sends it: a step's next, committed with a batch).
    pub fn in_trace(mut self, traceparent: Option<&str>) -> Self {
        if let Some(t) = traceparent {
            self.traceparent = Some(t.to_owned());
        }
        self
    }

    pub fn with_correlation_id(mut self, id: impl Into<String>) -> Self {
        self.correlation_id = Some(id.into());
        self
    }

    pub fn encode(&self, limit: usize) -> Result<Vec<u8>, EnvelopeError> {
        self.check_fields()?;
        let bytes =
            serde_json::to_vec(self).map_err(|e| EnvelopeError::Malformed(e.to_string()))?;
        if bytes.len() > limit {
            return Err(EnvelopeError::TooLarge {
                size: bytes.len(),
                limit,
            });
        }
        Ok(bytes)
    }

    pub fn decode(bytes: &[u8], limit: usize) -> Result<Self, EnvelopeError> {
        if bytes.len() > limit {
            return Err(EnvelopeError::TooLarge {
                size: bytes.len(),
                limit,
            });
        }
        let env: Envelope =
            serde_json::from_slice(bytes).map_err(|e| EnvelopeError::Malformed(e.to_string()))?;
        env.check_fields()?;
        Ok(env)
    }

    fn check_fields(&self) -> Result<(), EnvelopeError> {
        if self.id.is_empty() || self.id.len() > 64 {
            return Err(EnvelopeError::Malformed(
                "`id` must be 1 to 64 characters".into(),
            ));
        }
        if self.kind.is_empty() || self.kind.len() > 128 {
            return Err(EnvelopeError::Malformed(
                "`kind` must be 1 to 128 characters".into(),
            ));
        }
        if self.traceparent.as_ref().is_some_and(|t| t.len() > 256) {
            return Err(EnvelopeError::Malformed(
                "`traceparent` must be at most 256 characters".into(),
            ));
        }
        Ok(())
    }

    /// The envelope for the next attempt, remembering why this one failed.
    pub fn next_attempt(&self, queue: &str, error: &str) -> Envelope {
        let mut next = self.with_failure(queue, error);
        next.attempt += 1;
        next
    }

    /// The envelope an operator sends back from the dead letters: a fresh attempt
    /// budget, the same id (so a message that did take effect meanwhile is still
    /// deduplicated) and its failure history kept.
    pub fn replayed(&self) -> Envelope {
        Envelope {
            attempt: 0,
            ..self.clone()
        }
    }

    /// This envelope with one more failure in its history (for dead-lettering).
    pub fn with_failure(&self, queue: &str, error: &str) -> Envelope {
        let mut next = self.clone();
        let mut error = error.to_owned();
        if error.len() > MAX_ERROR_LEN {
            let mut cut = MAX_ERROR_LEN;
            while !error.is_char_boundary(cut) {
                cut -= 1;
            }
            error.truncate(cut);
        }
        next.failures.push(Failure {
            attempt: self.attempt,
            queue: queue.to_owned(),
            error,
            at: Utc::now(),
            consumer: Some(crate::instance::name().to_owned()),
        });
        if next.failures.len() > MAX_FAILURES {
            next.failures.remove(0);
        }
        next
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let e = Envelope::new("test.kind", serde_json::json!({"n": 1})).with_correlation_id("c1");
        let bytes = e.encode(1024).unwrap();
        assert_eq!(Envelope::decode(&bytes, 1024).unwrap(), e);
    }

    #[test]
    fn rejects_garbage_and_oversize() {
        assert!(matches!(
            Envelope::decode(b"not json", 1024),
            Err(EnvelopeError::Malformed(_))
        ));
        assert!(matches!(
            Envelope::decode(
                br#"{"id":"","kind":"k","created_at":"2026-01-01T00:00:00Z","payload":{}}"#,
                1024
            ),
            Err(EnvelopeError::Malformed(_))
        ));
        let big = Envelope::new("k", serde_json::json!({"blob": "x".repeat(2000)}));
        assert!(matches!(
            big.encode(1024),
            Err(EnvelopeError::TooLarge { .. })
        ));
    }

    #[test]
    fn accepts_a_hand_written_message() {
        let body =
            br#"{"id":"abc","kind":"k","created_at":"2026-12-02T12:00:00Z","payload":{"x":1}}"#;
        let e = Envelope::decode(body, 1024).unwrap();
        assert_eq!(e.attempt, 0);
        assert!(e.failures.is_empty());
    }

    #[test]
    fn history_is_bounded() {
        let mut e = Envelope::new("k", serde_json::json!({}));
        for _ in 0..15 {
            e = e.next_attempt("q", &"e".repeat(5000));
        }
        assert_eq!(e.attempt, 15);
        assert_eq!(e.failures.len(), MAX_FAILURES);
        assert_eq!(e.failures[0].attempt, 5);
        assert!(e.failures[0].error.len() <= MAX_ERROR_LEN);
    }
}
