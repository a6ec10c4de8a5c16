//! What the dead-letter routes answer: the views, and operate errors as HTTP errors.

use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::dead_letters::{Action, DeadLetter, OperateError, Operated};
use crate::error::ApiError;

/// What operators see of a dead letter; `body` and `actions` only in the detail view.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeadLetterView {
    pub id: i64,
    pub message_id: String,
    pub queue: String,
    pub kind: String,
    pub reason: String,
    pub status: String,
    pub attempts: i32,
    pub last_error: String,
    pub history: Value,
    /// What the message was about (a task, order, payment, material or delivery id).
    pub business_id: Option<String>,
    /// The consumer instance that handled it last.
    pub consumer: Option<String>,
    /// The distributed trace the message was sent in (when the sender exported traces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<ActionView>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ActionView {
    pub action: String,
    pub actor: String,
    pub at: chrono::DateTime<chrono::Utc>,
}

/// The trace id in a dead letter's body (its envelope's `traceparent`).
fn trace_of(body: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Traced {
        traceparent: Option<String>,
    }
    let t: Traced = serde_json::from_str(body).ok()?;
    crate::traces::trace_id(t.traceparent.as_deref()?).map(str::to_owned)
}

impl From<DeadLetter> for DeadLetterView {
    fn from(d: DeadLetter) -> Self {
        DeadLetterView {
            trace_id: trace_of(&d.body),
            history: serde_json::from_str(&d.history).unwrap_or_else(|_| json!([])),
            id: d.id,
            message_id: d.message_id,
            queue: d.queue,
            kind: d.kind,
            reason: d.reason,
            status: d.status,
            attempts: d.attempts,
            last_error: d.last_error,
            business_id: d.business_id,
            consumer: d.consumer,
            created_at: d.created_at,
            updated_at: d.updated_at,
            body: None,
            actions: None,
        }
    }
}

impl From<Action> for ActionView {
    fn from(a: Action) -> Self {
        ActionView {
            action: a.action,
            actor: a.actor,
            at: a.at,
        }
    }
}

/// Ids are numbers; anything else names no dead letter.
pub(super) fn parse_id(id: &str) -> Result<i64, ApiError> {
    id.parse().map_err(|_| ApiError::not_found("dead letter"))
}

pub(super) fn operate_error(e: OperateError) -> ApiError {
    match e {
        OperateError::NotFound(_) => ApiError::not_found("dead letter"),
        OperateError::Conflict { .. } | OperateError::NotReplayable { .. } => {
            ApiError::conflict(e.to_string())
        }
        OperateError::Db(e) => e.into(),
    }
}

/// The answer to a replay or discard.
#[derive(Debug, Serialize, ToSchema)]
pub struct OperatedView {
    pub dead_letter: DeadLetterView,
    /// It had been done before: nothing happened this time.
    pub already: bool,
}

pub(super) fn operated(o: Operated) -> axum::Json<OperatedView> {
    axum::Json(OperatedView {
        dead_letter: o.dead_letter.into(),
        already: o.already,
    })
}

#[cfg(test)]
mod tests {
    use super::trace_of;

    #[test]
    fn a_dead_letter_shows_the_trace_its_envelope_was_sent_in() {
        let body = r#"{"id":"m","kind":"k","created_at":"2026-12-06T00:00:00Z","payload":{},
            "traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#;
        assert_eq!(
            trace_of(body).as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert_eq!(trace_of(r#"{"id":"m","payload":{}}"#), None);
        assert_eq!(trace_of("{not json"), None);
        assert_eq!(trace_of(r#"{"traceparent":"junk"}"#), None);
    }
}
