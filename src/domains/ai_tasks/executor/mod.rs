//! The executor seam: how one step of a task is actually done, by the provider its kind
//! (or pipeline step) names. `simulated` is the embedded default; `openai` speaks
//! OpenAI-compatible streamed chat completions and image generations.

pub mod artifacts;
pub mod dify;
pub mod fleet_slots;
pub mod gate;
pub mod http;
pub mod openai;
pub mod simulated;
pub mod sse;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;

use crate::storage::Storage;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::kinds::TaskKind;
use crate::domains::ai_tasks::settings::{AiSettings, Protocol, ProviderSettings};

/// One step of one task, as the executor sees it.
#[derive(Debug)]
pub struct Job<'a> {
    pub task_id: &'a str,
    /// The task's owner: whose folder its files go in.
    pub user_id: &'a str,
    pub kind: TaskKind,
    pub step: &'a str,
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

#[async_trait]
pub trait Executor: Send + Sync + 'static {
    /// Runs one step and returns its output; stops early when `cancel` fires.
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<serde_json::Value, ExecError>;
}

/// The configured providers, routed per kind and pipeline step (`[ai.kinds.<kind>]
/// provider` and `steps`).
pub fn from_settings(
    ai: &AiSettings,
    storage: Arc<Storage>,
    gates: Arc<gate::Gates>,
) -> anyhow::Result<Arc<dyn Executor>> {
    let gate = |name: &str, p: &ProviderSettings| {
        gates
            .gate(name, p.requests_per_minute, p.tokens_per_minute)
            .with_fleet_cap(p.fleet_max_concurrent)
    };
    let mut providers: HashMap<&str, Named> = HashMap::new();
    for (name, p) in &ai.providers {
        let exec: Arc<dyn Executor> = match p.protocol {
            Protocol::Simulated => Arc::new(simulated::Simulated::new(ai, storage.clone())),
            Protocol::Openai => Arc::new(openai::OpenAi::new(p, gate(name, p), storage.clone())?),
            Protocol::Dify => Arc::new(dify::Dify::new(p, gate(name, p))?),
        };
        providers.insert(name, (name.clone(), exec));
    }
    let pick = |name: &str| {
        providers
            .get(name)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("no provider {name:?} in [ai.providers]"))
    };
    let mut by_kind = HashMap::new();
    let mut by_step = HashMap::new();
    for (kind, k) in &ai.kinds {
        by_kind.insert(kind.clone(), pick(&k.provider)?);
        for (step, provider) in &k.steps {
            by_step.insert((kind.clone(), step.clone()), pick(provider)?);
        }
    }
    Ok(Arc::new(Routed { by_kind, by_step }))
}

/// A provider with the name it is configured under.
type Named = (String, Arc<dyn Executor>);

/// Each step to the provider its kind (or the step) names; the output is stamped with
/// that name (`provider`), which the usage records.
struct Routed {
    by_kind: HashMap<String, Named>,
    by_step: HashMap<(String, String), Named>,
}

#[async_trait]
impl Executor for Routed {
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<serde_json::Value, ExecError> {
        let kind = job.kind.as_str();
        let (name, exec) = self
            .by_step
            .get(&(kind.to_owned(), job.step.to_owned()))
            .or_else(|| self.by_kind.get(kind))
            .ok_or_else(|| ExecError::Permanent(format!("no provider serves {kind}")))?;
        let mut output = exec.run(job, progress, cancel).await?;
        if let Some(o) = output.as_object_mut() {
            o.insert("provider".into(), name.as_str().into());
        }
        Ok(output)
    }
}
