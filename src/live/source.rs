//! [`Source`]: what a domain implements so its things can be followed live (tasks,
//! orders), and [`Sources`], the registry of them by stream kind.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::{DatabaseConnection, DbErr};
use serde_json::Value;

use super::Event;

/// A followed thing as it is now.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Who may follow it (and admins).
    pub owner: String,
    /// The sequence number of its latest stored event.
    pub seq: i64,
    /// It reached an end state: nothing more will happen.
    pub terminal: bool,
    /// What clients see of it (the same view as its REST resource).
    pub view: Value,
}

#[async_trait]
pub trait Source: Send + Sync + 'static {
    /// The stream kind clients name in `subscribe` (`task`, `order`).
    fn kind(&self) -> &'static str;

    /// The thing now; `None` when there is no such thing.
    async fn snapshot(&self, db: &DatabaseConnection, id: &str) -> Result<Option<Snapshot>, DbErr>;

    /// Its stored events with a sequence number above `after`, oldest first. `owner`
    /// is the snapshot's (stored events need not repeat it).
    async fn events_after(
        &self,
        db: &DatabaseConnection,
        id: &str,
        owner: &str,
        after: i64,
    ) -> Result<Vec<Event>, DbErr>;

    /// Events about the followed things among `ids` that change without a stored event
    /// (a waiting task's place in line), each with the thing's latest sequence number
    /// and `transient` set; asked every `live.refresh_ms` for the ids followed on this
    /// instance. None by default.
    async fn between(
        &self,
        _db: &DatabaseConnection,
        _ids: &[String],
    ) -> Result<Vec<Event>, DbErr> {
        Ok(Vec::new())
    }
}

/// Every stream kind of the running domains.
#[derive(Clone, Default)]
pub struct Sources(Arc<HashMap<&'static str, Arc<dyn Source>>>);

impl Sources {
    pub fn new(sources: impl IntoIterator<Item = Arc<dyn Source>>) -> Self {
        Sources(Arc::new(
            sources.into_iter().map(|s| (s.kind(), s)).collect(),
        ))
    }

    pub fn get(&self, kind: &str) -> Option<&Arc<dyn Source>> {
        self.0.get(kind)
    }

    /// Every source.
    pub fn all(&self) -> Vec<Arc<dyn Source>> {
        self.0.values().cloned().collect()
    }

    /// The kinds, sorted, for error messages.
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut k: Vec<_> = self.0.keys().copied().collect();
        k.sort_unstable();
        k
    }
}
