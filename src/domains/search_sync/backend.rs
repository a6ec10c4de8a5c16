//! This process's search backend: the configured index and the circuit breaker in front
//! of it, opened once per process on first use ([`LazySearch`]) and shared by the sync
//! consumer, the search route and the readiness check. On first use, because the
//! embedded index is a directory one process holds: a consumer process of another group
//! never opens it.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;

use super::breaker::Breaker;
use super::settings::{Backend as Engine, SearchSettings};
use crate::search::SearchIndex;
use crate::search::elastic::ElasticIndex;
use crate::search::embedded::EmbeddedIndex;

pub struct Search {
    pub index: Arc<dyn SearchIndex>,
    pub breaker: Breaker,
    pub settings: SearchSettings,
}

/// The process's one [`Search`], opened by whichever part uses it first.
pub struct LazySearch {
    settings: SearchSettings,
    opened: Mutex<Option<Arc<Search>>>,
}

impl LazySearch {
    pub fn new(settings: SearchSettings) -> Self {
        LazySearch {
            settings,
            opened: Mutex::new(None),
        }
    }

    /// A backend opened already (a tool or a benchmark that holds its index).
    pub fn opened(search: Arc<Search>) -> Self {
        LazySearch {
            settings: search.settings.clone(),
            opened: Mutex::new(Some(search)),
        }
    }

    /// The backend, opened now if nothing opened it yet.
    pub fn get(&self) -> anyhow::Result<Arc<Search>> {
        let mut opened = self
            .opened
            .lock()
            .map_err(|_| anyhow::anyhow!("search backend lock poisoned"))?;
        if let Some(search) = opened.as_ref() {
            return Ok(search.clone());
        }
        let search = Arc::new(Search::open(self.settings.clone())?);
        *opened = Some(search.clone());
        Ok(search)
    }
}

impl Search {
    /// Opens the configured index. Elasticsearch is not contacted yet (a process starts
    /// while the engine is down); the embedded index is opened (and locked) now.
    pub fn open(settings: SearchSettings) -> anyhow::Result<Search> {
        let index: Arc<dyn SearchIndex> = match settings.backend {
            Engine::Embedded => {
                let dir = (!settings.path.is_empty()).then(|| Path::new(&settings.path));
                Arc::new(EmbeddedIndex::open(dir).with_context(|| {
                    format!(
                        "opening the embedded search index at `{}` (search.path; one process \
                         at a time: use search.backend = \"elasticsearch\" with several)",
                        settings.path
                    )
                })?)
            }
            Engine::Elasticsearch => Arc::new(ElasticIndex::new(
                &settings.url,
                &settings.alias,
                settings.refresh,
            )?),
        };
        Ok(Search {
            index,
            breaker: Breaker::new(
                settings.breaker_failures,
                Duration::from_millis(settings.breaker_open_ms),
            ),
            settings,
        })
    }
}
