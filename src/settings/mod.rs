//! [`Settings`]: the whole configuration, put together from the sections each module
//! owns (its type and its checks live with it: `[broker]` in [`crate::broker::settings`],
//! `[server]` in [`crate::api::settings`], …), the per-queue overrides, the per-tenant
//! limits, and the domains' own sections, kept as documents each domain reads and checks
//! itself ([`Section`]). Loading and layering are [`crate::config`]'s.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::api::settings::{AuthSettings, ServerSettings};
use crate::broker::settings::{BrokerSettings, QueueOverride};
use crate::config;
use crate::config::ConfigError;
use crate::config::ListKey;
use crate::consumer::settings::ConsumerSettings;
use crate::db::settings::DatabaseSettings;
use crate::dead_letters::settings::DeadLetterSettings;
use crate::dedupe::settings::DedupeSettings;
use crate::live::settings::LiveSettings;
use crate::ops::settings::OpsSettings;
use crate::outbox::settings::OutboxSettings;
use crate::storage::settings::StorageSettings;
use crate::telemetry::settings::LogSettings;
use crate::traces::TraceSettings;

/// Every section. A top-level table that neither a platform module nor a domain claims
/// is an error ([`Settings::check_sections`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    pub server: ServerSettings,
    pub log: LogSettings,
    /// `[telemetry]`: traces (off unless an OTLP endpoint is set).
    #[serde(default)]
    pub telemetry: TraceSettings,
    pub database: DatabaseSettings,
    pub broker: BrokerSettings,
    pub dedupe: DedupeSettings,
    pub consumer: ConsumerSettings,
    pub outbox: OutboxSettings,
    pub live: LiveSettings,
    pub dead_letters: DeadLetterSettings,
    pub storage: StorageSettings,
    /// `[limits]`: per-tenant limits by key, each declared by the module that enforces
    /// it ([`crate::limits::declared`]); a key not set keeps its declared default.
    #[serde(default)]
    pub limits: BTreeMap<String, u32>,
    /// `[plans.<name>]`: what each plan gives ([`crate::plans::settings`]).
    #[serde(default)]
    pub plans: BTreeMap<String, crate::plans::PlanSettings>,
    pub auth: AuthSettings,
    pub ops: OpsSettings,
    #[serde(default)]
    pub queues: BTreeMap<String, QueueOverride>,
    /// The domains' sections, by top-level key.
    #[serde(flatten)]
    pub sections: BTreeMap<String, serde_json::Value>,
}

/// A domain's settings section: its top-level key, its check (ranges and shapes that
/// types cannot express) and its environment lists.
#[derive(Debug, Clone, Copy)]
pub struct Section {
    pub key: &'static str,
    pub check: fn(&Settings) -> Result<(), ConfigError>,
    pub lists: &'static [ListKey],
}

impl Section {
    pub const fn new(key: &'static str, check: fn(&Settings) -> Result<(), ConfigError>) -> Self {
        Section {
            key,
            check,
            lists: &[],
        }
    }

    /// Keys of the section set from the environment as comma-separated lists.
    pub const fn lists(mut self, lists: &'static [ListKey]) -> Self {
        self.lists = lists;
        self
    }
}

impl Settings {
    /// Loads base → `<config_dir>/<env>.toml` (if present) → environment, with the
    /// environment lists of `sections`. `env` defaults to `CONVEYOR_ENV`, then "local";
    /// the directory to `CONVEYOR_CONFIG_DIR`, then `./config`.
    pub fn load(env: Option<&str>, sections: &[Section]) -> Result<Self, ConfigError> {
        let env = env
            .map(str::to_owned)
            .or_else(|| std::env::var("CONVEYOR_ENV").ok())
            .unwrap_or_else(|| "local".to_owned());
        let dir = std::env::var("CONVEYOR_CONFIG_DIR").unwrap_or_else(|_| "config".to_owned());
        let lists: Vec<ListKey> = sections
            .iter()
            .flat_map(|s| s.lists.iter().copied())
            .collect();
        Self::load_with(Path::new(&dir), &env, std::env::vars(), &lists)
    }

    /// The testable core of [`Settings::load`]: explicit directory, overlay and
    /// variables, the platform's lists only.
    pub fn load_from(
        dir: &Path,
        env: &str,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        Self::load_with(dir, env, vars, &[])
    }

    /// [`Settings::load_from`] with the domains' environment lists besides.
    pub fn load_with(
        dir: &Path,
        env: &str,
        vars: impl IntoIterator<Item = (String, String)>,
        domain_lists: &[ListKey],
    ) -> Result<Self, ConfigError> {
        let lists: Vec<ListKey> = crate::broker::settings::LISTS
            .iter()
            .chain(domain_lists)
            .copied()
            .collect();
        let settings: Settings = config::layered(dir, env, vars, &lists)?.try_deserialize()?;
        settings.validate()?;
        Ok(settings)
    }

    /// Each platform section's own checks.
    fn validate(&self) -> Result<(), ConfigError> {
        self.server.validate()?;
        self.auth.validate()?;
        self.database.validate()?;
        self.broker.validate()?;
        crate::broker::settings::validate_queues(&self.queues)?;
        self.telemetry.validate()?;
        self.dedupe.validate()?;
        self.live.validate()?;
        self.dead_letters.validate()?;
        self.storage.validate()?;
        self.ops.validate()?;
        self.consumer.validate()?;
        self.outbox.validate()
    }

    /// Domain section `key` as the domain's own type.
    pub fn section<T: serde::de::DeserializeOwned>(
        &self,
        key: &'static str,
    ) -> Result<T, ConfigError> {
        let value = self
            .sections
            .get(key)
            .cloned()
            .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
        serde_json::from_value(value).map_err(|e| ConfigError::Invalid {
            key,
            problem: e.to_string(),
        })
    }

    /// Every section is one of `sections` and passes its check.
    pub fn check_sections(&self, sections: &[Section]) -> Result<(), ConfigError> {
        if let Some(unknown) = self
            .sections
            .keys()
            .find(|k| !sections.iter().any(|s| s.key == k.as_str()))
        {
            return Err(ConfigError::UnknownSection(unknown.clone()));
        }
        sections.iter().try_for_each(|s| (s.check)(self))
    }

    /// The whole configuration as JSON with every secret masked ([`config::masked`]).
    pub fn masked(&self) -> serde_json::Value {
        config::masked(serde_json::to_value(self).unwrap_or_default())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
