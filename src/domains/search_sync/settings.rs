//! `[search]`: which search backend the materials go to, and how the sync treats it.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;
use crate::providers::ProvidersSettings;

use crate::settings::Section;

use crate::settings::Settings;

pub const SECTION: Section =
    Section::new("search", |s| SearchSettings::from_settings(s).map(|_| ()));

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// tantivy in `path` (in memory when empty), inside the process that runs the
    /// `search` consumer group and the API: one process (the embedded broker's setup).
    Embedded,
    /// Elasticsearch 7+/8+/9+ or OpenSearch 2 at `url`, written through `alias`.
    Elasticsearch,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchSettings {
    pub backend: Backend,
    /// The embedded index's directory; empty keeps it in memory (tests).
    pub path: String,
    /// The engine's URL (`http://host:9200`).
    pub url: String,
    /// The alias searches and writes go through; its indices are `<alias>-v<n>`.
    pub alias: String,
    /// Wait for each bulk to become searchable before acking it (tests). Off, the engine
    /// makes writes searchable on its refresh interval (1 s by default).
    pub refresh: bool,
    /// Consecutive failed bulk requests that open the circuit breaker.
    pub breaker_failures: u32,
    /// How long an open breaker keeps batches away from the backend (they go to the
    /// retry tiers) before one is let through to try it.
    pub breaker_open_ms: u64,
    /// The least cosine a search by meaning lists, unless the request says otherwise.
    pub semantic_min_score: f32,
    /// The provider (a key of `[ai.providers]`) that embeds a search by meaning's query:
    /// it must be the one whose model embedded the materials. Empty: that one, the
    /// provider of the video-analysis knowledge entry ([`SearchSettings::query_provider`]).
    #[serde(default)]
    pub embedding_provider: String,
}

/// Where the materials' vectors are made, in the settings tree: the `[ai]` table's
/// video-analysis kind, its knowledge-entry step's provider (`steps`), else the kind's
/// `provider`, else the simulator (the kind's default).
const EMBEDDED_BY: [&str; 2] = [
    "/kinds/video_analysis/steps/build_knowledge_entry",
    "/kinds/video_analysis/provider",
];

impl SearchSettings {
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        let s: SearchSettings = settings.section(SECTION.key)?;
        if s.backend == Backend::Elasticsearch && !s.url.starts_with("http") {
            return Err(ConfigError::Invalid {
                key: "search.url",
                problem: "must be an http:// or https:// URL with the elasticsearch backend".into(),
            });
        }
        let alias_ok = !s.alias.is_empty()
            && s.alias
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
        if !alias_ok {
            return Err(ConfigError::Invalid {
                key: "search.alias",
                problem: "must be lowercase letters, digits, '-', '_' or '.'".into(),
            });
        }
        if !(-1.0..=1.0).contains(&s.semantic_min_score) {
            return Err(ConfigError::Invalid {
                key: "search.semantic_min_score",
                problem: "must be a cosine, from -1 to 1".into(),
            });
        }
        if s.breaker_failures == 0 {
            return Err(ConfigError::Invalid {
                key: "search.breaker_failures",
                problem: "must be at least 1".into(),
            });
        }
        if !s.embedding_provider.is_empty()
            && !ProvidersSettings::from_settings(settings)?
                .providers
                .contains_key(&s.embedding_provider)
        {
            return Err(ConfigError::Invalid {
                key: "search.embedding_provider",
                problem: format!("{:?} is not in [ai.providers]", s.embedding_provider),
            });
        }
        Ok(s)
    }

    /// The provider that embeds a search's query: `embedding_provider`, else the one
    /// that embeds the materials (read from the settings tree, [`EMBEDDED_BY`]).
    pub fn query_provider(&self, settings: &Settings) -> String {
        if !self.embedding_provider.is_empty() {
            return self.embedding_provider.clone();
        }
        let ai = settings.sections.get("ai");
        EMBEDDED_BY
            .iter()
            .find_map(|at| ai?.pointer(at)?.as_str())
            .unwrap_or("simulated")
            .to_owned()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn load(vars: &[(&str, &str)]) -> Result<(Settings, SearchSettings), ConfigError> {
        let vars = vars.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        let s = Settings::load_from(std::path::Path::new("/nonexistent"), "none", vars)?;
        let search = SearchSettings::from_settings(&s)?;
        Ok((s, search))
    }

    #[test]
    fn queries_are_embedded_by_the_provider_that_embeds_the_materials() {
        let (s, search) = load(&[]).unwrap();
        assert_eq!(search.query_provider(&s), "simulated");
        let (s, search) =
            load(&[("CONVEYOR__AI__KINDS__VIDEO_ANALYSIS__PROVIDER", "openai")]).unwrap();
        assert_eq!(search.query_provider(&s), "openai");
        let (s, search) = load(&[
            ("CONVEYOR__AI__KINDS__VIDEO_ANALYSIS__PROVIDER", "openai"),
            (
                "CONVEYOR__AI__KINDS__VIDEO_ANALYSIS__STEPS__BUILD_KNOWLEDGE_ENTRY",
                "replicate",
            ),
        ])
        .unwrap();
        assert_eq!(search.query_provider(&s), "replicate");
        let (s, search) = load(&[("CONVEYOR__SEARCH__EMBEDDING_PROVIDER", "openai")]).unwrap();
        assert_eq!(search.query_provider(&s), "openai");
        let err = load(&[("CONVEYOR__SEARCH__EMBEDDING_PROVIDER", "magic")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("search.embedding_provider") && err.contains("magic"),
            "{err}"
        );
    }
}
