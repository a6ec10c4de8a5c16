//! This process's search backend: the configured index and the circuit breaker in front
//! of it, made once per process and shared by the sync consumer, the search route and
//! the readiness check.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use super::breaker::Breaker;
use super::settings::{Backend, SearchSettings};
use crate::platform::Platform;
use crate::search::SearchIndex;
use crate::search::elastic::ElasticIndex;
use crate::search::embedded::EmbeddedIndex;

pub struct Search {
    pub index: Arc<dyn SearchIndex>,
    pub breaker: Breaker,
    pub settings: SearchSettings,
}

impl Search {
    /// The process's one backend, opened on first use.
    pub async fn of(platform: &Platform) -> anyhow::Result<Arc<Search>> {
        platform
            .shared(|| async { Search::open(SearchSettings::from_settings(&platform.settings)?) })
            .await
    }

    /// Opens the configured index. Elasticsearch is not contacted yet (a process starts
    /// while the engine is down); the embedded index is opened (and locked) now.
    pub fn open(settings: SearchSettings) -> anyhow::Result<Search> {
        let index: Arc<dyn SearchIndex> = match settings.backend {
            Backend::Embedded => {
                let dir = (!settings.path.is_empty()).then(|| Path::new(&settings.path));
                Arc::new(EmbeddedIndex::open(dir).with_context(|| {
                    format!(
                        "opening the embedded search index at `{}` (search.path; one process \
                         at a time: use search.backend = \"elasticsearch\" with several)",
                        settings.path
                    )
                })?)
            }
            Backend::Elasticsearch => Arc::new(ElasticIndex::new(
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
