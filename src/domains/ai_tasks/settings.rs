//! `[ai]`: the AI-task flow's settings section, read from the configuration's domain
//! sections ([`crate::settings::Settings::section`]) and checked at start-up.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::usage::pricing::{Price, TokenPricing};
use crate::config::{ConfigError, ListKey};

use crate::settings::Section;

use crate::settings::Settings;

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
    AiSettings::from_settings(settings).map(|_| ())
}

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// The built-in simulator (deterministic output, real files, no network).
    Simulated,
    /// OpenAI-compatible: `/chat/completions` (streamed) for text, `/images/generations`
    /// for images. OpenAI, DeepSeek, Qwen (DashScope compatible mode), vLLM, Ollama, …
    Openai,
    /// A Dify workflow: `/workflows/run`, streamed (node events as progress, text
    /// chunks as deltas) or blocking.
    Dify,
    /// Replicate's predictions API: the job is created, parked, and checked (or
    /// called back) until it ends; outputs are downloaded into storage.
    Replicate,
    /// Any API of the same shape (Kling, Runway, Luma, Tripo, an in-house farm), its
    /// paths and fields in `[ai.providers.<name>.prediction]`.
    Prediction,
    /// FFmpeg on this machine: the video-analysis pipeline's extraction (audio segments
    /// and keyframes from the task's upload).
    Ffmpeg,
}

impl Protocol {
    /// Whether a step at this provider parks instead of holding its worker.
    pub fn parks(self) -> bool {
        matches!(self, Protocol::Replicate | Protocol::Prediction)
    }
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
    pub shedding: super::shedding::SheddingSettings,
    pub kinds: BTreeMap<String, KindSettings>,
    /// Providers by name (`[ai.providers.<name>]`); kinds name the one that serves them.
    pub providers: BTreeMap<String, ProviderSettings>,
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

/// One provider: `[ai.providers.<name>]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    pub protocol: Protocol,
    /// The API's base (`https://api.openai.com/v1`, `https://api.deepseek.com/v1`).
    #[serde(default)]
    pub base_url: String,
    /// Secret: set it from the environment (`CONVEYOR__AI__PROVIDERS__<NAME>__API_KEY`).
    #[serde(default)]
    pub api_key: String,
    /// The model for text.
    #[serde(default)]
    pub model: String,
    /// The model for images (`/images/generations`); empty: this provider makes none.
    #[serde(default)]
    pub image_model: String,
    /// The model for speech to text (`/audio/transcriptions`).
    #[serde(default = "default_audio_model")]
    pub audio_model: String,
    /// The model for embeddings (`/embeddings`).
    #[serde(default = "default_embedding_model")]
    pub embedding_model: String,
    /// Per request; a stream may run this long in all.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// A stream that sends nothing for this long is given up on (a transient failure).
    #[serde(default = "default_idle_ms")]
    pub stream_idle_ms: u64,
    /// Client-side requests per second of this process.
    #[serde(default = "default_rps")]
    pub requests_per_second: u32,
    /// The provider's quota for the whole fleet, requests per minute (in Redis with the
    /// real backends; 0: none).
    #[serde(default)]
    pub requests_per_minute: u32,
    /// The provider's token quota for the whole fleet, per minute (ten seconds' worth
    /// may go at once); each call takes its estimate (the prompt's bytes / 4 and its
    /// output limit) before it is sent, as OpenAI counts it. 0: none.
    #[serde(default)]
    pub tokens_per_minute: u32,
    /// A 429 that says to come back within this long pauses the provider for the whole
    /// fleet and the call waits, then tries again (no retry tier, no dead letter); a
    /// longer one fails the attempt as transient.
    #[serde(default = "default_retry_wait_ms")]
    pub max_retry_wait_ms: u64,
    /// Calls in flight at once from this process (a stream counts until it ends); 0:
    /// no cap. With N consumer processes the provider sees at most N times this.
    #[serde(default)]
    pub max_concurrent: u32,
    /// Calls in flight at once across the whole fleet (leased places in Redis with the
    /// real backends; a stream holds its place until it ends); 0: no cap.
    #[serde(default)]
    pub fleet_max_concurrent: u32,
    /// Dify: the workflow's inputs, each from the task: `"prompt"`, or `"params.<key>"`
    /// (a string field of the task's params).
    #[serde(default = "default_inputs")]
    pub inputs: BTreeMap<String, String>,
    /// Dify: the workflow output that holds the text.
    #[serde(default = "default_output")]
    pub output: String,
    /// Dify: `streaming` (node progress and text chunks live) or `blocking`.
    #[serde(default = "default_response_mode")]
    pub response_mode: String,
    /// A prediction-style API's paths and fields (`protocol = "prediction"`; the
    /// `replicate` preset needs none).
    #[serde(default)]
    pub prediction: Option<super::executor::prediction::api::PredictionApi>,
    /// The secret callbacks are signed with (Standard Webhooks, as Replicate signs:
    /// `whsec_…`); empty: callbacks are taken on their unguessable URL alone. Secret:
    /// set it from the environment.
    #[serde(default)]
    pub webhook_secret: String,
    /// How long a job here usually takes: one parked longer is flagged on /ops and by
    /// the `parked_overdue` alert.
    #[serde(default = "default_expected_secs")]
    pub expected_secs: u64,
    /// FFmpeg: the length of each audio segment (one speech-to-text request each).
    #[serde(default = "default_segment_secs")]
    pub segment_secs: u64,
    /// FFmpeg: JPEG thumbnails taken evenly across the video.
    #[serde(default = "default_keyframes")]
    pub keyframes: u32,
}

fn default_segment_secs() -> u64 {
    600
}
fn default_keyframes() -> u32 {
    3
}

fn default_expected_secs() -> u64 {
    1800
}

fn default_stream_coalesce_ms() -> u64 {
    50
}

fn default_audio_model() -> String {
    "whisper-1".to_owned()
}
fn default_embedding_model() -> String {
    "text-embedding-3-small".to_owned()
}

fn default_inputs() -> BTreeMap<String, String> {
    BTreeMap::from([("prompt".to_owned(), "prompt".to_owned())])
}
fn default_output() -> String {
    "text".to_owned()
}
fn default_response_mode() -> String {
    "streaming".to_owned()
}

fn default_retry_wait_ms() -> u64 {
    30_000
}

fn default_timeout_ms() -> u64 {
    120_000
}
fn default_idle_ms() -> u64 {
    30_000
}
fn default_rps() -> u32 {
    10
}

impl AiSettings {
    /// The provider that serves step `step` of `kind`.
    pub fn provider_of(
        &self,
        kind: super::TaskKind,
        step: &str,
    ) -> Option<(&str, &ProviderSettings)> {
        let k = self.kinds.get(kind.as_str())?;
        let name = k.steps.get(step).unwrap_or(&k.provider);
        self.providers.get(name).map(|p| (name.as_str(), p))
    }

    /// Whether step `step` of `kind` runs at a provider that parks its jobs.
    pub fn parks(&self, kind: super::TaskKind, step: &str) -> bool {
        self.provider_of(kind, step)
            .is_some_and(|(_, p)| p.protocol.parks())
    }

    /// The `[ai]` section, checked.
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        let ai: AiSettings = settings.section(SECTION.key)?;
        ai.validate(settings.broker.consumer_timeout_ms)?;
        Ok(ai)
    }

    /// Checks what types cannot, naming the offending key. `consumer_timeout_ms` is the
    /// broker's: a task that may run that long would have its delivery taken back mid-run.
    pub fn validate(&self, consumer_timeout_ms: u64) -> Result<(), ConfigError> {
        let ai = self;
        let bad = |key, problem: String| Err(ConfigError::Invalid { key, problem });
        if ai.heartbeat_ms == 0 || ai.stale_after_ms <= ai.heartbeat_ms * 2 {
            return bad(
                "ai.stale_after_ms",
                "must be more than twice ai.heartbeat_ms (and that above 0)".into(),
            );
        }
        if ai.cancel_refund_started_percent > 100 {
            return bad(
                "ai.cancel_refund_started_percent",
                "must be 0 to 100".into(),
            );
        }
        if !(10..=2000).contains(&ai.stream_coalesce_ms) {
            return bad("ai", "stream_coalesce_ms must be 10 to 2000".into());
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
            if let Some(p) = &k.pricing
                && (p.per_1k_input < 0 || p.per_1k_output < 0 || p.max_output_tokens == 0)
            {
                return bad(
                    "ai.kinds",
                    format!(
                        "ai.kinds.{kind}.pricing: prices must not be negative and max_output_tokens must be above 0"
                    ),
                );
            }
            // RabbitMQ closes a channel whose delivery stays unacked past consumer_timeout;
            // a kind whose providers park holds no delivery while its job runs (conveyor
            // enforces its deadline on the parked task).
            let parks = std::iter::once(&k.provider)
                .chain(k.steps.values())
                .filter_map(|p| ai.providers.get(p))
                .all(|p| p.protocol.parks());
            if k.deadline_secs == 0
                || (!parks && k.deadline_secs.saturating_mul(1000) >= consumer_timeout_ms)
            {
                return bad(
                    "ai.kinds",
                    format!(
                        "ai.kinds.{kind}.deadline_secs must be above 0 and below broker.consumer_timeout_ms ({consumer_timeout_ms} ms): \
                         the broker takes back a delivery unacked that long"
                    ),
                );
            }
        }
        for kind in &ai.shedding.kinds {
            if super::TaskKind::parse(kind).is_none_or(|k| k == super::TaskKind::VideoAnalysis) {
                return bad(
                    "ai.shedding.kinds",
                    format!(
                        "{kind:?}: name kinds other than video_analysis (the core path it protects)"
                    ),
                );
            }
        }
        for (kind, k) in &ai.kinds {
            let steps = super::TaskKind::parse(kind)
                .map(|k| k.steps())
                .unwrap_or(&[]);
            for step in &k.approval_before {
                if !steps.iter().skip(1).any(|s| s == step) {
                    return bad(
                        "ai.kinds",
                        format!(
                            "ai.kinds.{kind}.approval_before: {step:?} is not a step of {kind} after its first ({})",
                            steps.join(", ")
                        ),
                    );
                }
            }
            if !k.approval_before.is_empty() && k.approval_timeout_secs == 0 {
                return bad(
                    "ai.kinds",
                    format!("ai.kinds.{kind}.approval_timeout_secs must be above 0"),
                );
            }
        }
        for (name, p) in &ai.providers {
            if p.protocol == Protocol::Openai
                && (p.base_url.is_empty() || p.requests_per_second == 0)
            {
                return bad(
                    "ai.providers",
                    format!(
                        "ai.providers.{name}: an openai provider needs base_url and requests_per_second above 0"
                    ),
                );
            }
        }
        for (kind, k) in &ai.kinds {
            for provider in std::iter::once(&k.provider).chain(k.steps.values()) {
                let Some(p) = ai.providers.get(provider) else {
                    return bad(
                        "ai.kinds",
                        format!(
                            "ai.kinds.{kind} names provider {provider:?}, which is not in [ai.providers]"
                        ),
                    );
                };
                let serves = match (p.protocol, kind.as_str()) {
                    (Protocol::Simulated, _) => true,
                    (Protocol::Openai, "copywriting") => !p.model.is_empty(),
                    (Protocol::Openai, "image") => !p.image_model.is_empty(),
                    (Protocol::Openai, _) => {
                        k.steps.values().any(|s| s == provider) && !p.model.is_empty()
                    }
                    // A workflow answers text: copywriting, or a pipeline's text steps.
                    (Protocol::Dify, "copywriting") => true,
                    (Protocol::Dify, _) => k.steps.values().any(|s| s == provider),
                    (Protocol::Ffmpeg, "video_analysis") => {
                        k.steps.get("extract_audio") == Some(provider) && k.provider != *provider
                    }
                    (Protocol::Ffmpeg, _) => false,
                    // A job answers files: images, videos, 3D models.
                    (Protocol::Replicate | Protocol::Prediction, kind) => {
                        matches!(kind, "image" | "video" | "model3d") && !p.base_url.is_empty()
                    }
                };
                if !serves {
                    return bad(
                        "ai.kinds",
                        format!(
                            "ai.kinds.{kind}: provider {provider:?} ({:?}) cannot serve it (text needs `model`, images `image_model`, jobs `base_url` and a media kind)",
                            p.protocol
                        ),
                    );
                }
            }
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
        let s = Settings::load_with(
            std::path::Path::new("/nonexistent"),
            "none",
            vars,
            SECTION.lists,
        )?;
        AiSettings::from_settings(&s)
    }

    #[test]
    fn the_defaults_pass_and_bad_values_name_the_key() {
        let ai = load(&[]).unwrap();
        assert_eq!(
            ai.providers[&ai.kinds["copywriting"].provider].protocol,
            Protocol::Simulated
        );
        assert!(ai.kinds.contains_key("video_analysis"));
        let err = load(&[("CONVEYOR__AI__STALE_AFTER_MS", "1")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("ai.stale_after_ms"), "{err}");
        let err = load(&[("CONVEYOR__AI__KINDS__IMAGE__PROVIDER", "magic")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ai.kinds.image") && err.contains("magic"),
            "{err}"
        );
        // The OpenAI provider makes text; images need an image model.
        let err = load(&[("CONVEYOR__AI__KINDS__IMAGE__PROVIDER", "openai")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("image_model"), "{err}");
        load(&[("CONVEYOR__AI__KINDS__COPYWRITING__PROVIDER", "openai")]).unwrap();
    }

    #[test]
    fn a_deadline_the_broker_would_cut_short_is_refused() {
        // Copywriting's deadline is 60 s: a broker that takes deliveries back after 60 s
        // would redeliver every task that uses its whole deadline.
        let err = load(&[("CONVEYOR__BROKER__CONSUMER_TIMEOUT_MS", "60000")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ai.kinds.copywriting.deadline_secs") && err.contains("consumer_timeout"),
            "{err}"
        );
        // Every default kind fits under the broker's own 30-min default.
        load(&[("CONVEYOR__BROKER__CONSUMER_TIMEOUT_MS", "1800000")]).unwrap();
    }

    #[test]
    fn a_kind_whose_provider_parks_may_run_for_hours() {
        let three_hours = ("CONVEYOR__AI__KINDS__MODEL3D__DEADLINE_SECS", "10800");
        // On a worker, three hours would outlive the broker's delivery.
        let err = load(&[three_hours]).unwrap_err().to_string();
        assert!(err.contains("ai.kinds.model3d.deadline_secs"), "{err}");
        // Parked at a provider, no delivery is held: conveyor enforces the deadline.
        let ai = load(&[
            three_hours,
            ("CONVEYOR__AI__KINDS__MODEL3D__PROVIDER", "replicate"),
        ])
        .unwrap();
        assert_eq!(ai.kinds["model3d"].deadline_secs, 10_800);
        // A job answers files, not copy.
        let err = load(&[("CONVEYOR__AI__KINDS__COPYWRITING__PROVIDER", "replicate")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("ai.kinds.copywriting"), "{err}");
    }

    #[test]
    fn an_approval_gates_a_later_step_of_the_kind() {
        load(&[(
            "CONVEYOR__AI__KINDS__VIDEO_ANALYSIS__APPROVAL_BEFORE",
            "summarize",
        )])
        .unwrap();
        for bad in ["extract_audio", "publish"] {
            let err = load(&[("CONVEYOR__AI__KINDS__VIDEO_ANALYSIS__APPROVAL_BEFORE", bad)])
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("approval_before") && err.contains(bad),
                "{err}"
            );
        }
    }
}
