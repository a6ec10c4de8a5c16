//! What the API shows of endpoints and deliveries (never a secret, except once).

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::entity::attempt;
use super::store::{Delivery, Endpoint};

/// A webhook endpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct EndpointView {
    pub id: String,
    pub url: String,
    pub description: String,
    /// The event types it receives; empty: every type.
    pub event_types: Vec<String>,
    pub enabled: bool,
    /// Why the platform disabled it (every delivery failed for days).
    pub disabled_reason: Option<String>,
    /// Since when every delivery has failed (`null`: the last one succeeded).
    pub failing_since: Option<DateTime<Utc>>,
    /// While a rotated-out secret still signs beside the new one.
    pub previous_secret_until: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Endpoint> for EndpointView {
    fn from(e: Endpoint) -> Self {
        let now = Utc::now();
        EndpointView {
            event_types: serde_json::from_str(&e.event_types).unwrap_or_default(),
            id: e.id,
            url: e.url,
            description: e.description,
            enabled: e.enabled,
            disabled_reason: e.disabled_reason,
            failing_since: e.failing_since,
            previous_secret_until: e.previous_until.filter(|u| *u > now),
            created_at: e.created_at,
            updated_at: e.updated_at,
        }
    }
}

/// A new endpoint (or a rotated secret): the secret is shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct EndpointWithSecret {
    #[serde(flatten)]
    pub endpoint: EndpointView,
    /// `whsec_…`: verify deliveries with it (any Standard Webhooks library). Shown once.
    pub secret: String,
}

/// One delivery of an event to an endpoint, with its latest attempt.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryView {
    pub id: String,
    /// The event's id: every delivery's `webhook-id`, retries included.
    pub event_id: String,
    pub event_type: String,
    /// `PENDING` (being attempted), `SUCCEEDED` (answered 2xx) or `FAILED` (given up, or
    /// its endpoint was disabled or deleted).
    pub status: super::entity::DeliveryStatus,
    pub attempts: i32,
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The last answer's status code, first bytes and time.
    pub last_status: Option<i32>,
    pub last_response: Option<String>,
    pub last_latency_ms: Option<i32>,
    /// Why the last attempt got no answer (a timeout, a refused connection).
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
    /// Every attempt, in order (when one delivery is read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<Vec<AttemptView>>,
}

impl From<Delivery> for DeliveryView {
    fn from(d: Delivery) -> Self {
        DeliveryView {
            id: d.id,
            event_id: d.event_id,
            event_type: d.event_type,
            status: d.status,
            attempts: d.attempts,
            next_attempt_at: d.next_attempt_at,
            last_status: d.last_status,
            last_response: d.last_response,
            last_latency_ms: d.last_latency_ms,
            last_error: d.last_error,
            created_at: d.created_at,
            delivered_at: d.delivered_at,
            log: None,
        }
    }
}

/// One attempt of a delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptView {
    pub attempt: i32,
    pub at: DateTime<Utc>,
    pub status: Option<i32>,
    pub response: Option<String>,
    pub latency_ms: i32,
    pub error: Option<String>,
}

impl From<attempt::Model> for AttemptView {
    fn from(a: attempt::Model) -> Self {
        AttemptView {
            attempt: a.attempt,
            at: a.at,
            status: a.status_code,
            response: a.response,
            latency_ms: a.latency_ms,
            error: a.error,
        }
    }
}
