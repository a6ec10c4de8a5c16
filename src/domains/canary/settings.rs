//! `[canary]`: how often the canary sends a ping.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;
use crate::settings::{Section, Settings};

pub const SECTION: Section =
    Section::new("canary", |s| CanarySettings::from_settings(s).map(|_| ()));

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CanarySettings {
    /// Milliseconds between pings; 0 sends none. At least 100 otherwise: the canary is a
    /// heartbeat, not load.
    pub interval_ms: u64,
}

impl CanarySettings {
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        let s: CanarySettings = settings.section(SECTION.key)?;
        if s.interval_ms != 0 && s.interval_ms < 100 {
            return Err(ConfigError::Invalid {
                key: "canary.interval_ms",
                problem: "must be 0 (off) or at least 100".into(),
            });
        }
        Ok(s)
    }
}
