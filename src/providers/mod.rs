//! The AI providers, a platform module below the domains: how one step of work is
//! actually done, by a provider named in `[ai.providers.<name>]`. The [`Executor`] trait
//! is the seam; `simulated` is the embedded default; `openai` speaks OpenAI-compatible
//! streamed chat completions, image generations, transcriptions and embeddings; `dify`
//! runs a workflow; `prediction` (and its `replicate` preset) starts a job the provider
//! works on for minutes or hours, which the caller parks instead of waiting for
//! ([`Outcome::Parked`]); `ffmpeg` extracts audio and keyframes on this machine.
//! [`Providers`] holds them by name, built once per process (their [`gate`]s keep the
//! fleet's rate limits and slots, in Redis with the real backends), and answers every call
//! with its span, its latency metric and the provider's name stamped on the output.
//!
//! Providers know no domain: a step names its provider, says what it wants ([`Wants`],
//! [`Job::vectors`]) and carries its kind and step as plain names. Which provider serves
//! which kind is the caller's routing (the AI-task flow's `[ai.kinds.<kind>] provider`
//! and `steps`); a search by meaning asks for a provider's [`Providers::embeddings`].
//!
//! Files: this one (the trait and what passes through it), [`registry`] (building the
//! providers by name), `calls` (one named provider's instrumented calls), [`settings`]
//! (`[ai.providers.*]` and their checks), [`usage`] (what a provider reports it used),
//! [`http`] and [`sse`] (requests, errors by class, streams), [`gate`] and
//! [`fleet_slots`] (the fleet's limits), [`artifacts`] (generated files into storage),
//! [`vectorize`] (an output's vectors for a search by meaning), and the adapters.

pub mod artifacts;
mod calls;
pub mod dify;
pub mod ffmpeg;
pub mod fleet_slots;
pub mod gate;
pub mod http;
pub mod openai;
pub mod prediction;
pub mod registry;
pub mod settings;
pub mod simulated;
pub mod sse;
pub mod usage;
pub mod vectorize;

pub use calls::Provider;
pub use registry::Providers;
pub use settings::{Protocol, ProviderSettings, ProvidersSettings};

use async_trait::async_trait;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::search::semantic::Embedded;

/// What a step asks of its provider: the adapters that do several things (the
/// OpenAI-compatible one: chat, images, transcription) pick by it. The caller sets it
/// from its own step, so no provider reads a domain's kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wants {
    /// Text (a chat completion, a workflow's text), or whatever a provider that makes one
    /// thing makes (a job's files, an extraction).
    Text,
    /// An image (`/images/generations`).
    Image,
    /// A transcript of the audio segments an earlier step stored, one request each.
    Transcript,
}

/// One step of one task, as the executor sees it.
#[derive(Debug)]
pub struct Job<'a> {
    pub task_id: &'a str,
    /// The task's owner: whose folder its files go in.
    pub user_id: &'a str,
    /// The task's kind by name (the simulator's durations and outputs go by it; spans
    /// and logs show it).
    pub kind: &'a str,
    pub step: &'a str,
    /// What the step asks of the provider.
    pub wants: Wants,
    /// Whether the finished output also gets vectors for a search by meaning
    /// ([`vectorize`]), embedded by the provider that ran the step.
    pub vectors: bool,
    pub step_index: usize,
    pub prompt: &'a str,
    pub params: &'a serde_json::Value,
    /// The claim number (1 for the first run, +1 per retry or re-drive).
    pub attempt: i32,
    /// Outputs of earlier pipeline steps.
    pub previous: &'a serde_json::Value,
    /// The most output tokens the step may produce (the kind's token pricing reserved
    /// for this many); sent to the provider as `max_tokens`.
    pub max_output_tokens: Option<u32>,
    /// Where the provider may call back when a parked job changes (a provider that
    /// supports webhooks); `None` when no public base URL is configured.
    pub callback_url: Option<&'a str>,
}

/// The output tokens a call is estimated at when the kind sets no limit (the fleet's
/// token budget takes the estimate before the call, as providers count it).
pub const DEFAULT_OUTPUT_ESTIMATE: usize = 1024;

impl Job<'_> {
    /// The tokens a text call for this job is estimated at: the prompt's bytes / 4 (and
    /// `extra` bytes of instructions), plus the output limit.
    pub fn token_estimate(&self, extra: usize) -> usize {
        (self.prompt.len() + extra).div_ceil(4)
            + self
                .max_output_tokens
                .map_or(DEFAULT_OUTPUT_ESTIMATE, |m| m as usize)
    }
}

/// What a running step reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// Progress inside the step: percent 0-100, and a message.
    Progress(i32, Option<String>),
    /// The next piece of the text being generated (streamed to subscribers as it comes).
    Text(String),
}

/// Where a running step reports.
pub type Progress = mpsc::UnboundedSender<Report>;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ExecError {
    /// Timeouts, 5xx, 429, a connection reset: worth retrying.
    #[error("{0}")]
    Transient(String),
    /// 4xx, content refused, invalid input: retrying cannot help.
    #[error("{0}")]
    Permanent(String),
    /// The task was canceled (or the attempt fenced) and the work stopped.
    #[error("canceled")]
    Canceled,
}

/// How a started (or checked) step stands: finished with its output, or parked at the
/// provider, to be checked again later with no worker held.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done(serde_json::Value),
    Parked(Parked),
}

impl Outcome {
    /// The finished output (`None` for a parked job).
    pub fn output(&self) -> Option<&serde_json::Value> {
        match self {
            Outcome::Done(v) => Some(v),
            Outcome::Parked(_) => None,
        }
    }
}

/// A job the provider works on by itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Parked {
    /// The `[ai.providers]` name the job lives at (stamped by [`Provider`]).
    pub provider: String,
    /// The provider's handle for the job (its id): what a check and a cancel name.
    pub handle: String,
    /// Progress the provider reported, 0-100, and its stage.
    pub progress: Option<i32>,
    pub message: Option<String>,
}

#[async_trait]
pub trait Executor: Send + Sync + 'static {
    /// Runs one step and returns its output; stops early when `cancel` fires.
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<serde_json::Value, ExecError>;

    /// Starts one step: a provider that answers later parks it ([`Outcome::Parked`]);
    /// every other runs it to the end.
    async fn start(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ExecError> {
        self.run(job, progress, cancel).await.map(Outcome::Done)
    }

    /// Checks a parked job (`handle` at `provider`): still running (parked again, with
    /// its progress), finished (its outputs stored), or failed.
    async fn check(
        &self,
        provider: &str,
        job: &Job<'_>,
        handle: &str,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ExecError> {
        let _ = (job, handle, cancel);
        Err(ExecError::Permanent(format!(
            "provider {provider:?} parks no jobs"
        )))
    }

    /// Asks the provider to stop a parked job (a cancel, a deadline); best effort.
    async fn cancel_job(&self, provider: &str, handle: &str) -> Result<(), ExecError> {
        let _ = (provider, handle);
        Ok(())
    }

    /// Embeds `inputs` for a search by meaning, one unit vector each in order; `None`
    /// from a provider that has no embeddings.
    async fn embed_texts(
        &self,
        inputs: &[String],
        cancel: &CancellationToken,
    ) -> Result<Option<Embedded>, ExecError> {
        let _ = (inputs, cancel);
        Ok(None)
    }
}
