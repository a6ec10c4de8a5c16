//! Real providers against wire-faithful fakes: the OpenAI-compatible adapter's streams,
//! images, error classes and fleet limits; Dify workflows; streamed copywriting end to end (deltas live, in order,
//! resumable; a cut stream's retry preceded by a reset; cancel stops the stream); credits by
//! the token and the usage report.

mod dify;
mod fake_dify;
mod fake_openai;
mod fake_openai_media;
mod fake_prediction;
mod fake_studio;
mod openai;
mod openai_media;
mod parked;
mod pricing;
mod retry;
mod streaming;
mod transcripts;

use conveyor::domains::ai_tasks::kinds::TaskKind;
use conveyor::providers::{ExecError, Executor, Job, Report};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Runs one step of `kind` with `prompt` and `params` on `exec`; its output and every
/// report it made, in order.
pub async fn run_job(
    exec: &dyn Executor,
    kind: TaskKind,
    prompt: &str,
    params: Value,
) -> (Result<Value, ExecError>, Vec<Report>) {
    let previous = Value::Null;
    let job = Job {
        task_id: "t1",
        user_id: "u1",
        kind: kind.as_str(),
        step: "generate",
        wants: kind.wants("generate"),
        vectors: false,
        step_index: 0,
        prompt,
        params: &params,
        attempt: 1,
        previous: &previous,
        max_output_tokens: None,
        callback_url: None,
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = exec.run(&job, &tx, &CancellationToken::new()).await;
    drop(tx);
    let mut reports = Vec::new();
    while let Some(r) = rx.recv().await {
        reports.push(r);
    }
    (out, reports)
}
