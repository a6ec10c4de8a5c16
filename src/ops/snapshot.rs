//! What the console shows: the [`Snapshot`] of one sample (queues, history, panels,
//! dead letters, alerts), as `GET /v1/admin/ops` answers it and its stream pushes it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::entity;
use super::panel::PanelView;

/// Everything the console shows, as of `at`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Snapshot {
    pub at: DateTime<Utc>,
    pub queues: Vec<QueueRow>,
    /// Per queue key, the points of the last `ops.history_secs`, oldest first.
    pub series: BTreeMap<String, Vec<Point>>,
    pub panels: Vec<PanelView>,
    pub dead_letters: DeadLetterSummary,
    pub alerts: AlertsView,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QueueRow {
    pub queue: String,
    pub group: String,
    /// Ready for a consumer.
    pub ready: u64,
    /// Parked in a retry tier.
    pub retrying: u64,
    /// Dead letters waiting for an operator (the database's count: the broker's DLQ holds
    /// copies of the same letters until the keeper drains it).
    pub dead: u64,
    /// Processes consuming it (that reported within the last three samples).
    pub consumers: u32,
    /// Their prefetch, summed: deliveries in flight at once.
    pub concurrency: u32,
    pub published_per_sec: f64,
    pub consumed_per_sec: f64,
    pub dead_per_sec: f64,
    /// Age of the oldest work waiting for it, where its domain can tell.
    pub oldest_age_secs: Option<f64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Point {
    pub at: DateTime<Utc>,
    pub ready: u64,
    pub retrying: u64,
    pub dead: u64,
    pub published_per_sec: f64,
    pub consumed_per_sec: f64,
}

#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct DeadLetterSummary {
    pub waiting: u64,
    pub by_queue: Vec<crate::dead_letters::Waiting>,
}

/// The alerts as the console and `GET /v1/admin/alerts` show them.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct AlertsView {
    pub active: Vec<AlertView>,
    /// The latest episodes, firing or resolved, newest first.
    pub history: Vec<AlertView>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AlertView {
    pub id: i64,
    pub rule: String,
    pub queue: String,
    /// `firing` or `resolved`.
    pub state: &'static str,
    pub summary: String,
    pub value: f64,
    pub threshold: f64,
    pub fired_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
}

impl From<entity::Model> for AlertView {
    fn from(m: entity::Model) -> Self {
        AlertView {
            id: m.id,
            state: if m.resolved_at.is_some() {
                "resolved"
            } else {
                "firing"
            },
            rule: m.rule,
            queue: m.queue,
            summary: m.summary,
            value: m.value,
            threshold: m.threshold,
            fired_at: m.fired_at,
            resolved_at: m.resolved_at,
        }
    }
}
