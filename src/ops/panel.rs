//! What a domain shows on the ops console: a few small tables (its work by status, the
//! oldest, the latest failures) and, per queue it feeds, when its oldest waiting work
//! was submitted (the queue row's "oldest"; the broker cannot tell a message's age
//! without taking it). A domain lists its panels in its `Domain`; the board loads each
//! at every sample within a time limit.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use sea_orm::DatabaseConnection;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

#[derive(Clone, Copy)]
pub struct Panel {
    /// Names the panel in the page and in its load failures.
    pub source: &'static str,
    pub load: for<'a> fn(&'a DatabaseConnection) -> BoxFuture<'a, anyhow::Result<PanelView>>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PanelView {
    pub source: String,
    pub title: String,
    pub tables: Vec<TableView>,
    /// When the oldest work still waiting for each queue (by key) was submitted.
    #[serde(skip)]
    pub oldest_waiting: BTreeMap<String, DateTime<Utc>>,
    /// The domain's own alert rules (by name) this panel reads: a subject of one that
    /// fired and is no longer in `conditions` has cleared.
    #[serde(skip)]
    pub rules: &'static [&'static str],
    /// The conditions of those rules that hold now, one per subject.
    #[serde(skip)]
    pub conditions: Vec<Condition>,
}

/// A domain's alert condition that holds, on one subject (a provider, a tenant); it
/// fires once it has held for `for_secs`, like the queue rules.
#[derive(Debug, Clone)]
pub struct Condition {
    pub rule: &'static str,
    pub subject: String,
    pub value: f64,
    pub threshold: f64,
    pub for_secs: u64,
    pub summary: String,
}

/// A table of cells (strings or numbers), drawn as it comes.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TableView {
    pub title: String,
    pub columns: Vec<String>,
    /// Cells: strings or numbers.
    #[schema(value_type = Vec<Vec<serde_json::Value>>)]
    pub rows: Vec<Vec<Value>>,
}
