//! `[ai]`: the AI-task flow's settings section, read from the configuration's domain
//! sections ([`crate::config::Settings::section`]) and checked at start-up.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, Section, Settings};

/// The section in the domain registry.
pub const SECTION: Section = Section { key: "ai", check };

fn check(settings: &Settings) -> Result<(), ConfigError> {
    AiSettings::from_settings(settings).map(|_| ())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    Simulated,
    Openai,
}

/// `[ai]`: the AI-task flow.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AiSettings {
    pub executor: ExecutorKind,
    pub heartbeat_ms: u64,
    pub stale_after_ms: u64,
    pub reaper_interval_ms: u64,
    pub max_prompt_chars: usize,
    pub max_params_bytes: usize,
    pub allow_failure_injection: bool,
    pub kinds: BTreeMap<String, KindSettings>,
    pub openai: OpenAiSettings,
}

/// `[ai.kinds.<kind>]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindSettings {
    pub cost: i64,
    pub deadline_secs: u64,
    /// Simulated executor: how long each step takes.
    pub simulated_step_ms: u64,
}

/// `[ai.openai]`: an OpenAI-compatible chat-completions endpoint for text kinds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiSettings {
    pub base_url: String,
    pub model: String,
    pub api_key: String,
    pub timeout_ms: u64,
    pub requests_per_second: u32,
}

impl AiSettings {
    /// The `[ai]` section, checked.
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        let ai: AiSettings = settings.section(SECTION.key)?;
        ai.validate()?;
        Ok(ai)
    }

    /// Checks what types cannot, naming the offending key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let ai = self;
        let bad = |key, problem: String| Err(ConfigError::Invalid { key, problem });
        if ai.heartbeat_ms == 0 || ai.stale_after_ms <= ai.heartbeat_ms * 2 {
            return bad(
                "ai.stale_after_ms",
                "must be more than twice ai.heartbeat_ms (and that above 0)".into(),
            );
        }
        if ai.reaper_interval_ms == 0 || ai.max_prompt_chars == 0 || ai.max_params_bytes == 0 {
            return bad(
                "ai",
                "reaper_interval_ms, max_prompt_chars and max_params_bytes must be above 0".into(),
            );
        }
        for kind in ["copywriting", "image", "video", "model3d", "video_analysis"] {
            let Some(k) = ai.kinds.get(kind) else {
                return bad("ai.kinds", format!("missing [ai.kinds.{kind}]"));
            };
            if k.cost < 0 {
                return bad(
                    "ai.kinds",
                    format!("ai.kinds.{kind}.cost must not be negative"),
                );
            }
            // RabbitMQ closes a channel whose delivery stays unacked past consumer_timeout (30 min).
            if k.deadline_secs == 0 || k.deadline_secs >= 1800 {
                return bad(
                    "ai.kinds",
                    format!(
                        "ai.kinds.{kind}.deadline_secs must be 1..1799 (below RabbitMQ's consumer_timeout)"
                    ),
                );
            }
        }
        if ai.executor == ExecutorKind::Openai && ai.openai.requests_per_second == 0 {
            return bad("ai.openai.requests_per_second", "must be above 0".into());
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn load(vars: &[(&str, &str)]) -> Result<AiSettings, ConfigError> {
        let vars = vars.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        let s = Settings::load_from(std::path::Path::new("/nonexistent"), "none", vars)?;
        AiSettings::from_settings(&s)
    }

    #[test]
    fn the_defaults_pass_and_bad_values_name_the_key() {
        let ai = load(&[]).unwrap();
        assert_eq!(ai.executor, ExecutorKind::Simulated);
        assert!(ai.kinds.contains_key("video_analysis"));
        let err = load(&[("CONVEYOR__AI__STALE_AFTER_MS", "1")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("ai.stale_after_ms"), "{err}");
        let err = load(&[("CONVEYOR__AI__EXECUTOR", "magic")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("`ai`") && err.contains("magic"), "{err}");
    }
}
