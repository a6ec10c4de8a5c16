//! `[ai]`: the AI-task flow's settings section, read from the configuration's domain
//! sections ([`crate::settings::Settings::section`]) and checked at start-up: the kinds
//! here, the checks types cannot make in `validate.rs`. The providers of
//! `[ai.providers.<name>]` are [`crate::providers`]' (their type and their own checks).

#[cfg(test)]
mod tests;
mod validate;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::usage::pricing::{Price, TokenPricing};
use crate::config::{ConfigError, ListKey};

use crate::settings::Section;

use crate::settings::Settings;

pub use crate::providers::{Protocol, ProviderSettings};

/// The section in the domain registry.
pub const SECTION: Section = Section::new("ai", check).lists(&[
    ListKey::plain("ai.kinds.copywriting.approval_before"),
    ListKey::plain("ai.kinds.image.approval_before"),
    ListKey::plain("ai.kinds.video.approval_before"),
    ListKey::plain("ai.kinds.model3d.approval_before"),
    ListKey::plain("ai.kinds.video_analysis.approval_before"),
    ListKey::plain("ai.shedding.kinds"),
]);

fn check(settings: &Settings) -> Result<(), ConfigError> {
    AiSettings::from_settings(settings)?;
    // The kinds a plan names are kinds of this flow.
    for (name, plan) in &settings.plans {
        if let Some(k) = plan
            .kinds
            .iter()
            .find(|k| super::kinds::TaskKind::parse(k).is_none())
        {
            let known: Vec<&str> = super::kinds::ALL_KINDS.iter().map(|k| k.as_str()).collect();
            return Err(ConfigError::Invalid {
                key: "plans",
                problem: format!(
                    "plans.{name}.kinds: unknown kind `{k}`; kinds: {}",
                    known.join(", ")
                ),
            });
        }
    }
    Ok(())
}

/// `[ai]`: the AI-task flow.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AiSettings {
    pub heartbeat_ms: u64,
    pub stale_after_ms: u64,
    pub reaper_interval_ms: u64,
    pub max_prompt_chars: usize,
    pub max_params_bytes: usize,
    pub allow_failure_injection: bool,
    /// Cancel policy: a task canceled after it started gets back its steps not started
    /// and this percent of the share of the step it was at (0-100).
    pub cancel_refund_started_percent: u8,
    /// Tasks a bulk retry or cancel (`POST /v1/admin/tasks/bulk`) acts on per second, per
    /// process: retrying a whole outage's failures must not flood the queues at once.
    pub bulk_per_second: u32,
    /// Streamed text is written (and pushed to subscribers) at most once per this many
    /// milliseconds per task, the pieces in between joined: the price of a stream in
    /// database writes and events against how soon a reader sees each token.
    #[serde(default = "default_stream_coalesce_ms")]
    pub stream_coalesce_ms: u64,
    /// The public base URL providers call back on (`https://api.example.com`): a
    /// parked job's callback is `{callback_base_url}/v1/callbacks/providers/<provider>/
    /// <token>`. Empty: parked jobs are polled only.
    #[serde(default)]
    pub callback_base_url: String,
    /// Shedding other kinds while the video-analysis pipeline is far behind.
    #[serde(default)]
    pub shedding: SheddingSettings,
    pub kinds: BTreeMap<String, KindSettings>,
    /// Providers by name (`[ai.providers.<name>]`); kinds name the one that serves them.
    pub providers: BTreeMap<String, ProviderSettings>,
}

/// `[ai.shedding]`: the kinds whose submissions give way while the video-analysis
/// pipeline is far behind.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SheddingSettings {
    /// Messages waiting in `ai.media.extract` + `ai.media.asr` from which the listed
    /// kinds are shed; 0: never.
    pub backlog: u64,
    /// The kinds shed (never `video_analysis`, the core path).
    pub kinds: Vec<String>,
    /// What `Retry-After` says.
    pub retry_after_secs: u64,
}

impl Default for SheddingSettings {
    fn default() -> Self {
        SheddingSettings {
            backlog: 0,
            kinds: vec!["image".into(), "video".into(), "model3d".into()],
            retry_after_secs: 30,
        }
    }
}

/// `[ai.kinds.<kind>]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindSettings {
    pub cost: i64,
    pub deadline_secs: u64,
    /// Simulated executor: how long each step takes.
    pub simulated_step_ms: u64,
    /// The provider (a key of `[ai.providers]`) that serves this kind.
    #[serde(default = "simulated")]
    pub provider: String,
    /// Per pipeline step, a provider other than `provider` (`transcribe = "asr"`).
    #[serde(default)]
    pub steps: BTreeMap<String, String>,
    /// Credits by the token on top of `cost` (`[ai.kinds.<kind>.pricing]`).
    #[serde(default)]
    pub pricing: Option<TokenPricing>,
    /// Pipeline steps that wait for a person's approval before they run (brand or
    /// compliance review of the copy before the video step spends more): the task
    /// waits with no worker held until the owner (or an admin, or whoever holds its
    /// approval link) approves or rejects it.
    #[serde(default)]
    pub approval_before: Vec<String>,
    /// An approval not given within this long rejects the step (the cancel policy's
    /// refund applies).
    #[serde(default = "default_approval_timeout_secs")]
    pub approval_timeout_secs: u64,
    /// Video analysis: videos longer than this are extracted and transcribed on queues of
    /// their own (`ai.media.extract.long`, `ai.media.asr.long`); 0: one lane.
    #[serde(default)]
    pub long_video_secs: u64,
}

fn default_approval_timeout_secs() -> u64 {
    86_400
}

impl KindSettings {
    /// How long step `step` waits for its approval, if it needs one.
    pub fn approval_for(&self, step: &str) -> Option<std::time::Duration> {
        self.approval_before
            .iter()
            .any(|s| s == step)
            .then(|| std::time::Duration::from_secs(self.approval_timeout_secs))
    }

    /// How a task of this kind is priced.
    pub fn price(&self) -> Price {
        Price {
            flat: self.cost,
            tokens: self.pricing,
        }
    }
}

fn simulated() -> String {
    "simulated".to_owned()
}

fn default_stream_coalesce_ms() -> u64 {
    50
}

impl AiSettings {
    /// The provider that serves step `step` of `kind`.
    pub fn provider_of(
        &self,
        kind: super::kinds::TaskKind,
        step: &str,
    ) -> Option<(&str, &ProviderSettings)> {
        let k = self.kinds.get(kind.as_str())?;
        let name = k.steps.get(step).unwrap_or(&k.provider);
        self.providers.get(name).map(|p| (name.as_str(), p))
    }

    /// Whether step `step` of `kind` runs at a provider that parks its jobs.
    pub fn parks(&self, kind: super::kinds::TaskKind, step: &str) -> bool {
        self.provider_of(kind, step)
            .is_some_and(|(_, p)| p.protocol.parks())
    }

    /// The `[ai]` section, checked.
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        let ai: AiSettings = settings.section(SECTION.key)?;
        ai.validate(settings.broker.consumer_timeout_ms)?;
        Ok(ai)
    }
}
