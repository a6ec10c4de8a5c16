//! Streamed chat completions (`stream: true`, `stream_options.include_usage`): each
//! `data:` chunk's `choices[0].delta.content` is reported as it arrives
//! ([`Report::Text`]: subscribers see it live), `[DONE]` ends it, and the final usage
//! chunk is kept in the result. A stream that stops before `[DONE]`, or is silent for
//! `stream_idle_ms`, is a transient failure: the task retries and subscribers are told
//! to discard the partial text. Cancelling drops the stream: the provider stops
//! generating, and billing, with it.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::OpenAi;
use crate::providers::http::snippet;
use crate::providers::sse::Events;
use crate::providers::{ExecError, Job, Progress, Report};

impl OpenAi {
    pub(super) async fn chat(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Value, ExecError> {
        let (system, user) = super::prompts::messages(job);
        let mut body = json!({
            "model": self.model,
            "stream": true,
            "stream_options": { "include_usage": true },
            "messages": [
                { "role": "system", "content": system },
                { "role": "user", "content": user },
            ],
        });
        if let Some(max) = job.max_output_tokens {
            // `max_tokens`: what every OpenAI-compatible server (DeepSeek, Qwen, vLLM)
            // reads; OpenAI still honours it for chat models.
            body["max_tokens"] = max.into();
        }
        let resp = self
            .http
            .send(
                || self.http.post("/chat/completions", &body),
                job.token_estimate(system.len() + user.len() - job.prompt.len()),
                cancel,
            )
            .await?;
        let _ = progress.send(Report::Progress(10, Some("the model is writing".into())));
        // Dropping `events` (a cancel, an error) closes the connection: the provider stops.
        let mut events = Events::of(resp, self.http.idle);
        let (mut text, mut usage, mut model, mut done) =
            (String::new(), Value::Null, Value::Null, false);
        while !done {
            let Some(event) = events.next(cancel).await? else {
                return Err(ExecError::Transient(
                    "the stream ended before [DONE]".into(),
                ));
            };
            if event.data.trim() == "[DONE]" {
                done = true;
                continue;
            }
            let chunk: Value = serde_json::from_str(&event.data)
                .map_err(|e| ExecError::Transient(format!("a malformed stream chunk: {e}")))?;
            if let Some(err) = chunk.get("error") {
                return Err(ExecError::Transient(format!(
                    "the provider failed mid-stream: {}",
                    snippet(&err.to_string())
                )));
            }
            if let Some(piece) = chunk
                .pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
                && !piece.is_empty()
            {
                text.push_str(piece);
                let _ = progress.send(Report::Text(piece.to_owned()));
            }
            if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
                usage = u.clone();
            }
            if model.is_null() {
                model = chunk.get("model").cloned().unwrap_or(Value::Null);
            }
        }
        if text.is_empty() {
            return Err(ExecError::Permanent("the provider streamed no text".into()));
        }
        let _ = progress.send(Report::Progress(100, Some("the model finished".into())));
        let model = if model.is_null() {
            json!(self.model)
        } else {
            model
        };
        let mut out = json!({ "text": text, "model": model, "usage": usage });
        // The pipeline's later steps read a summary by its name.
        if job.step == "summarize" {
            out["summary"] = out["text"].clone();
        }
        Ok(out)
    }
}
