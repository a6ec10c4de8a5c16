//! A Dify workflow as a provider: `POST {base_url}/workflows/run` with the workflow's
//! `inputs` mapped from the task (`[ai.providers.<name>] inputs`), the task's owner as
//! Dify's `user`, and `response_mode` streaming or blocking.
//!
//! Streaming: `workflow_started`; `node_started` / `node_finished` become step progress
//! (the node's title as the message); `text_chunk` pieces become live text deltas;
//! `workflow_finished` ends it with `status` and `outputs` (the configured `output` key
//! is the text; all outputs are kept in the result) and `total_tokens` as usage. A
//! workflow that finishes `failed` or `stopped` is a permanent failure (its error goes
//! to the log); a stream that stops before `workflow_finished` or goes silent is
//! transient. `ping` events keep the stream alive. Errors of the request itself are
//! classed like every HTTP provider's ([`super::http`]).

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::gate::Gate;
use super::http::{ProviderHttp, snippet};
use super::sse::Events;
use super::{ExecError, Executor, Job, Progress, Report};
use crate::providers::settings::ProviderSettings;

pub struct Dify {
    http: ProviderHttp,
    inputs: BTreeMap<String, String>,
    output: String,
    streaming: bool,
}

impl Dify {
    pub fn new(s: &ProviderSettings, gate: Gate) -> anyhow::Result<Self> {
        Ok(Dify {
            http: ProviderHttp::new(s, gate)?,
            inputs: s.inputs.clone(),
            output: s.output.clone(),
            streaming: s.response_mode == "streaming",
        })
    }

    /// The workflow's inputs from the task.
    fn inputs_of(&self, job: &Job<'_>) -> Value {
        let mut inputs = serde_json::Map::new();
        for (name, source) in &self.inputs {
            let value = match source.strip_prefix("params.") {
                Some(key) => job.params.get(key).cloned().unwrap_or(Value::Null),
                None => Value::String(job.prompt.to_owned()),
            };
            inputs.insert(name.clone(), value);
        }
        Value::Object(inputs)
    }

    /// The result of a finished workflow (`data` of `workflow_finished`, or of the
    /// blocking answer).
    fn finished(&self, data: &Value, streamed: &str) -> Result<Value, ExecError> {
        let status = data.get("status").and_then(Value::as_str).unwrap_or("");
        if status != "succeeded" {
            let error = data
                .get("error")
                .map(|e| snippet(&e.to_string()))
                .unwrap_or_default();
            return Err(ExecError::Permanent(format!(
                "the workflow ended {status}: {error}"
            )));
        }
        let outputs = data.get("outputs").cloned().unwrap_or(Value::Null);
        let text = outputs
            .get(&self.output)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| streamed.to_owned());
        if text.is_empty() {
            return Err(ExecError::Permanent(format!(
                "the workflow's outputs have no {:?}",
                self.output
            )));
        }
        Ok(json!({
            "text": text,
            "outputs": outputs,
            "workflow_run_id": data.get("id").cloned().unwrap_or(Value::Null),
            "usage": { "total_tokens": data.get("total_tokens").cloned().unwrap_or(Value::Null) },
        }))
    }
}

#[async_trait]
impl Executor for Dify {
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Value, ExecError> {
        let _slot = self.http.slot(cancel).await?;
        let body = json!({
            "inputs": self.inputs_of(job),
            "response_mode": if self.streaming { "streaming" } else { "blocking" },
            "user": job.user_id,
        });
        let resp = self
            .http
            .send(
                || self.http.post("/workflows/run", &body),
                job.token_estimate(0),
                cancel,
            )
            .await?;
        if !self.streaming {
            let answer: Value = tokio::select! {
                _ = cancel.cancelled() => return Err(ExecError::Canceled),
                a = resp.json() => a.map_err(|e: reqwest::Error| ExecError::Transient(format!("reading the workflow's answer: {}", e.without_url())))?,
            };
            return self.finished(answer.get("data").unwrap_or(&Value::Null), "");
        }
        let mut events = Events::of(resp, self.http.idle);
        let (mut text, mut nodes_done) = (String::new(), 0i32);
        loop {
            let Some(event) = events.next(cancel).await? else {
                return Err(ExecError::Transient(
                    "the workflow stream ended before workflow_finished".into(),
                ));
            };
            let v: Value = serde_json::from_str(&event.data)
                .map_err(|e| ExecError::Transient(format!("a malformed workflow event: {e}")))?;
            let data = v.get("data").cloned().unwrap_or(Value::Null);
            let title = || data.get("title").and_then(Value::as_str).map(str::to_owned);
            match v
                .get("event")
                .and_then(Value::as_str)
                .unwrap_or(event.event.as_str())
            {
                "node_started" => {
                    let _ =
                        progress.send(Report::Progress((10 + nodes_done * 15).min(90), title()));
                }
                "node_finished" => {
                    nodes_done += 1;
                    let _ = progress.send(Report::Progress(
                        (10 + nodes_done * 15).min(90),
                        title().map(|t| format!("{t} done")),
                    ));
                }
                "text_chunk" => {
                    if let Some(piece) = data
                        .get("text")
                        .and_then(Value::as_str)
                        .filter(|t| !t.is_empty())
                    {
                        text.push_str(piece);
                        let _ = progress.send(Report::Text(piece.to_owned()));
                    }
                }
                "workflow_finished" => {
                    let result = self.finished(&data, &text)?;
                    let _ =
                        progress.send(Report::Progress(100, Some("the workflow finished".into())));
                    return Ok(result);
                }
                "error" => {
                    return Err(ExecError::Transient(format!(
                        "the workflow failed mid-stream: {}",
                        snippet(&v.to_string())
                    )));
                }
                // workflow_started, ping, and events added later: nothing to report.
                _ => {}
            }
        }
    }
}
