//! `[ai.providers.<name>]`: a provider, the protocol it speaks and its limits, and the
//! checks each provider passes by itself. The table sits in `[ai]` (its keys predate this
//! module); the AI-task flow reads and checks the whole of `[ai]` strictly (a misspelt
//! key stops the start-up there), while [`ProvidersSettings`] reads only what the
//! providers use, so they need no domain to be built.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;
use crate::settings::Settings;

/// The configuration table the providers' keys live in.
pub const TABLE: &str = "ai";

/// What the providers read of `[ai]`: the providers by name and the simulator's knobs.
#[derive(Debug, Clone, Default)]
pub struct ProvidersSettings {
    pub providers: BTreeMap<String, ProviderSettings>,
    pub simulation: Simulation,
}

/// The simulated provider's knobs: how long a step of each kind takes
/// (`ai.kinds.<kind>.simulated_step_ms`) and whether a task's `params.simulate` may
/// inject failures (`ai.allow_failure_injection`).
#[derive(Debug, Clone, Default)]
pub struct Simulation {
    pub step_ms: HashMap<String, u64>,
    pub allow_failures: bool,
}

/// `[ai]` as the providers read it: unknown keys are the task flow's.
#[derive(Deserialize)]
struct Table {
    #[serde(default)]
    providers: BTreeMap<String, ProviderSettings>,
    #[serde(default)]
    allow_failure_injection: bool,
    #[serde(default)]
    kinds: BTreeMap<String, SimulatedKind>,
}

#[derive(Deserialize)]
struct SimulatedKind {
    #[serde(default = "default_simulated_step_ms")]
    simulated_step_ms: u64,
}

/// The simulator's step when a kind sets none.
fn default_simulated_step_ms() -> u64 {
    1000
}

impl ProvidersSettings {
    /// The providers' part of `[ai]`, each provider checked ([`validate`]).
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        let t: Table = settings.section(TABLE)?;
        validate(&t.providers)?;
        Ok(ProvidersSettings {
            providers: t.providers,
            simulation: Simulation {
                step_ms: t
                    .kinds
                    .into_iter()
                    .map(|(kind, k)| (kind, k.simulated_step_ms))
                    .collect(),
                allow_failures: t.allow_failure_injection,
            },
        })
    }
}

/// What types cannot check of each provider by itself, naming the offending key.
pub fn validate(providers: &BTreeMap<String, ProviderSettings>) -> Result<(), ConfigError> {
    let bad = |problem: String| {
        Err(ConfigError::Invalid {
            key: "ai.providers",
            problem,
        })
    };
    for (name, p) in providers {
        // 0 would refuse every extraction: a typo, not a setting.
        if p.protocol == Protocol::Ffmpeg && p.max_output_mib == 0 {
            return bad(format!(
                "ai.providers.{name}: max_output_mib must be above 0"
            ));
        }
        if p.protocol == Protocol::Openai && (p.base_url.is_empty() || p.requests_per_second == 0) {
            return bad(format!(
                "ai.providers.{name}: an openai provider needs base_url and requests_per_second above 0"
            ));
        }
    }
    Ok(())
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

    /// Whether a provider of this protocol calls out over the network (and so takes
    /// the fleet's limits).
    pub fn calls_out(self) -> bool {
        !matches!(self, Protocol::Simulated | Protocol::Ffmpeg)
    }
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
    pub prediction: Option<crate::providers::prediction::api::PredictionApi>,
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
    /// FFmpeg: the program run (a name looked up on PATH, or a path: a build of its own
    /// in /opt, a wrapper that sets a nice level).
    #[serde(default = "default_program")]
    pub program: String,
    /// FFmpeg: the most one extraction may write (its audio and keyframes, on scratch
    /// and in the store), in MiB; a video whose extraction would write more fails
    /// (`output_too_large`). 16 kHz mono WAV is ~1.8 MiB a minute: 1024 is ~9 hours.
    #[serde(default = "default_max_output_mib")]
    pub max_output_mib: u64,
}

fn default_max_output_mib() -> u64 {
    1024
}

fn default_program() -> String {
    "ffmpeg".into()
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
