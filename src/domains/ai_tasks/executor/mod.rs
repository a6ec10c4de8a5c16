//! The executor seam: how one step of a task is actually done. `simulated` is the
//! embedded default; `openai` speaks OpenAI-compatible chat completions for text kinds.

pub mod artifacts;
pub mod openai;
pub mod simulated;

use std::sync::Arc;

use async_trait::async_trait;

use crate::storage::Storage;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::kinds::TaskKind;
use crate::domains::ai_tasks::settings::{AiSettings, ExecutorKind};

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
}

/// Progress inside the current step: (percent 0-100, message).
pub type Progress = mpsc::UnboundedSender<(i32, Option<String>)>;

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

/// The configured executor: text kinds go to OpenAI when configured, the rest is simulated.
pub fn from_settings(ai: &AiSettings, storage: Arc<Storage>) -> anyhow::Result<Arc<dyn Executor>> {
    let simulated = Arc::new(simulated::Simulated::new(ai, storage));
    Ok(match ai.executor {
        ExecutorKind::Simulated => simulated,
        ExecutorKind::Openai => Arc::new(Routed {
            text: Arc::new(openai::OpenAi::new(&ai.openai)?),
            other: simulated,
        }),
    })
}

/// Copywriting to the text provider, everything else to the simulator.
struct Routed {
    text: Arc<dyn Executor>,
    other: Arc<dyn Executor>,
}

#[async_trait]
impl Executor for Routed {
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<serde_json::Value, ExecError> {
        if job.kind == TaskKind::Copywriting {
            self.text.run(job, progress, cancel).await
        } else {
            self.other.run(job, progress, cancel).await
        }
    }
}
