//! An OpenAI-compatible provider (OpenAI, DeepSeek, Qwen's compatible mode, vLLM, …):
//! streamed chat completions for text and `/images/generations` for images.
//!
//! Text streams (`stream: true`, `stream_options.include_usage`): each `data:` chunk's
//! `choices[0].delta.content` is reported as it arrives ([`Report::Text`]: subscribers
//! see it live), `[DONE]` ends it, and the final usage chunk is kept in the result. A
//! stream that stops before `[DONE]`, or is silent for `stream_idle_ms`, is a transient
//! failure: the task retries and subscribers are told to discard the partial text.
//! Cancelling drops the stream: the provider stops generating, and billing, with it.
//!
//! Errors by what a retry can change: 429, 5xx, timeouts, resets and cut streams are
//! transient; other 4xx (a content-policy refusal, a bad key) are permanent. The
//! provider's own words go to the log, never to the tenant.

use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine as _;
use bytes::Bytes;
use eventsource_stream::Eventsource as _;
use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::artifacts;
use super::gate::Gate;
use super::http::{ProviderHttp, snippet};
use super::{ExecError, Executor, Job, Progress, Report};
use crate::domains::ai_tasks::kinds::TaskKind;
use crate::domains::ai_tasks::settings::ProviderSettings;
use crate::storage::Storage;
use crate::storage::records::{Dimensions, GeneratedFile};
use crate::storage::sniff::{Purpose, check};

pub struct OpenAi {
    http: ProviderHttp,
    model: String,
    image_model: String,
    storage: Arc<Storage>,
}

impl OpenAi {
    pub fn new(s: &ProviderSettings, gate: Gate, storage: Arc<Storage>) -> anyhow::Result<Self> {
        Ok(OpenAi {
            http: ProviderHttp::new(s, gate)?,
            model: s.model.clone(),
            image_model: s.image_model.clone(),
            storage,
        })
    }

    async fn chat(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Value, ExecError> {
        let mut body = json!({
            "model": self.model,
            "stream": true,
            "stream_options": { "include_usage": true },
            "messages": [
                { "role": "system", "content": "You write short, punchy marketing copy for short videos." },
                { "role": "user", "content": job.prompt },
            ],
        });
        if let Some(max) = job.max_output_tokens {
            // `max_tokens`: what every OpenAI-compatible server (DeepSeek, Qwen, vLLM)
            // reads; OpenAI still honours it for chat models.
            body["max_tokens"] = max.into();
        }
        let resp = self
            .http
            .send(|| self.http.post("/chat/completions", &body), cancel)
            .await?;
        let _ = progress.send(Report::Progress(10, Some("the model is writing".into())));
        let mut events = resp.bytes_stream().eventsource();
        let (mut text, mut usage, mut model, mut done) =
            (String::new(), Value::Null, Value::Null, false);
        while !done {
            let next = tokio::select! {
                // Dropping the stream closes the connection: the provider stops.
                _ = cancel.cancelled() => return Err(ExecError::Canceled),
                n = tokio::time::timeout(self.http.idle, events.next()) => n,
            };
            let event = match next {
                Err(_) => {
                    return Err(ExecError::Transient(format!(
                        "the stream was silent for {} ms",
                        self.http.idle.as_millis()
                    )));
                }
                Ok(None) => {
                    return Err(ExecError::Transient(
                        "the stream ended before [DONE]".into(),
                    ));
                }
                Ok(Some(Err(e))) => {
                    return Err(ExecError::Transient(format!("reading the stream: {e}")));
                }
                Ok(Some(Ok(e))) => e,
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
        Ok(
            json!({ "text": text, "model": if model.is_null() { json!(self.model) } else { model }, "usage": usage }),
        )
    }

    async fn image(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Value, ExecError> {
        let body = json!({ "model": self.image_model, "prompt": job.prompt, "n": 1, "size": "1024x1024", "response_format": "b64_json" });
        let resp = self
            .http
            .send(|| self.http.post("/images/generations", &body), cancel)
            .await?;
        let answer: Value = resp.json().await.map_err(|e| {
            ExecError::Transient(format!("reading the images answer: {}", e.without_url()))
        })?;
        let _ = progress.send(Report::Progress(60, Some("storing the image".into())));
        let first = answer.pointer("/data/0").cloned().unwrap_or(Value::Null);
        let accept = |head: &[u8]| check(Purpose::Image, head);
        let key_for = |kind| artifacts::key_of(job.user_id, job.task_id, job.step, kind);
        // The provider's bytes become our file; its URL (which expires) is never handed on.
        let written = if let Some(b64) = first.get("b64_json").and_then(Value::as_str) {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| ExecError::Permanent(format!("the image is not base64: {e}")))?;
            let kind = accept(&bytes).map_err(ExecError::Permanent)?;
            let key = key_for(kind)
                .map_err(|e: crate::storage::StorageError| ExecError::Transient(e.to_string()))?;
            self.storage
                .put(&key, Bytes::from(bytes), kind)
                .await
                .map_err(|e| ExecError::Transient(format!("storing the image: {e}")))?
        } else if let Some(url) = first.get("url").and_then(Value::as_str) {
            let limit = self.storage.settings.max_image_bytes;
            self.storage
                .ingest(&self.http.client, url, limit, accept, key_for)
                .await
                .map_err(|e| match e {
                    crate::storage::ingest::IngestError::Refused(why) => ExecError::Permanent(why),
                    e => ExecError::Transient(e.to_string()),
                })?
        } else {
            return Err(ExecError::Permanent(
                "the images answer has no data[0].b64_json or url".into(),
            ));
        };
        let file = GeneratedFile::new(&written, Dimensions::default());
        Ok(json!({ "files": [file], "model": self.image_model, "usage": { "images": 1 } }))
    }
}

#[async_trait]
impl Executor for OpenAi {
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Value, ExecError> {
        let _slot = self.http.slot(cancel).await?;
        match job.kind {
            TaskKind::Image => self.image(job, progress, cancel).await,
            _ => self.chat(job, progress, cancel).await,
        }
    }
}
