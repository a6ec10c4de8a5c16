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

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use bytes::Bytes;
use eventsource_stream::Eventsource as _;
use futures::StreamExt as _;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::gate::{self, Gate};
use super::{ExecError, Executor, Job, Progress, Report};

/// Rate-limited answers waited out in one attempt before it fails as transient.
const MAX_RATE_LIMITED: usize = 4;
use crate::domains::ai_tasks::kinds::TaskKind;
use crate::domains::ai_tasks::settings::ProviderSettings;
use crate::storage::records::{Dimensions, GeneratedFile};
use crate::storage::sniff::{Purpose, check};
use crate::storage::{Key, Storage};

pub struct OpenAi {
    client: reqwest::Client,
    base: String,
    model: String,
    image_model: String,
    api_key: String,
    idle: Duration,
    limiter: DefaultDirectRateLimiter,
    /// The fleet's budget and pause of this provider.
    gate: Gate,
    max_retry_wait: Duration,
    storage: Arc<Storage>,
}

impl OpenAi {
    pub fn new(s: &ProviderSettings, gate: Gate, storage: Arc<Storage>) -> anyhow::Result<Self> {
        let per_second = NonZeroU32::new(s.requests_per_second).unwrap_or(NonZeroU32::MIN);
        Ok(OpenAi {
            client: reqwest::Client::builder()
                .timeout(Duration::from_millis(s.timeout_ms))
                .connect_timeout(Duration::from_secs(5))
                .build()?,
            base: s.base_url.trim_end_matches('/').to_owned(),
            model: s.model.clone(),
            image_model: s.image_model.clone(),
            api_key: s.api_key.clone(),
            idle: Duration::from_millis(s.stream_idle_ms.max(1)),
            limiter: RateLimiter::direct(Quota::per_second(per_second)),
            gate,
            max_retry_wait: Duration::from_millis(s.max_retry_wait_ms),
            storage,
        })
    }

    fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        let req = self.client.post(format!("{}{path}", self.base)).json(body);
        if self.api_key.is_empty() {
            req
        } else {
            req.bearer_auth(&self.api_key)
        }
    }

    /// Sends the request `build` makes once the fleet's gate and this process's limit
    /// allow, and classifies a failed answer. A 429 that says when to come back (within
    /// `max_retry_wait_ms`) pauses the provider for the fleet, waits, and sends again.
    async fn send(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, ExecError> {
        for _ in 0..MAX_RATE_LIMITED {
            self.gate.ready(cancel).await?;
            tokio::select! {
                _ = cancel.cancelled() => return Err(ExecError::Canceled),
                _ = self.limiter.until_ready() => {}
            }
            let resp = tokio::select! {
                _ = cancel.cancelled() => return Err(ExecError::Canceled),
                r = build().send() => r.map_err(|e| ExecError::Transient(format!("provider unreachable: {}", e.without_url())))?,
            };
            let status = resp.status();
            if status.is_success() {
                return Ok(resp);
            }
            if status.as_u16() == 429
                && let Some(wait) =
                    gate::retry_after(resp.headers()).filter(|w| *w <= self.max_retry_wait)
            {
                tracing::info!(
                    wait_ms = wait.as_millis() as u64,
                    "provider rate-limited: pausing it for the fleet"
                );
                metrics::counter!("conveyor_provider_rate_limited_total").increment(1);
                self.gate.pause(wait).await;
                continue;
            }
            let text = resp.text().await.unwrap_or_default();
            let said = format!("provider answered {status}: {}", snippet(&text));
            return if status.as_u16() == 429 || status.as_u16() == 408 || status.is_server_error() {
                Err(ExecError::Transient(said))
            } else {
                Err(ExecError::Permanent(said))
            };
        }
        Err(ExecError::Transient(
            "provider still rate-limited after waiting".into(),
        ))
    }

    async fn chat(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Value, ExecError> {
        let body = json!({
            "model": self.model,
            "stream": true,
            "stream_options": { "include_usage": true },
            "messages": [
                { "role": "system", "content": "You write short, punchy marketing copy for short videos." },
                { "role": "user", "content": job.prompt },
            ],
        });
        let resp = self
            .send(|| self.post("/chat/completions", &body), cancel)
            .await?;
        let _ = progress.send(Report::Progress(10, Some("the model is writing".into())));
        let mut events = resp.bytes_stream().eventsource();
        let (mut text, mut usage, mut model, mut done) =
            (String::new(), Value::Null, Value::Null, false);
        while !done {
            let next = tokio::select! {
                // Dropping the stream closes the connection: the provider stops.
                _ = cancel.cancelled() => return Err(ExecError::Canceled),
                n = tokio::time::timeout(self.idle, events.next()) => n,
            };
            let event = match next {
                Err(_) => {
                    return Err(ExecError::Transient(format!(
                        "the stream was silent for {} ms",
                        self.idle.as_millis()
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
            .send(|| self.post("/images/generations", &body), cancel)
            .await?;
        let answer: Value = resp.json().await.map_err(|e| {
            ExecError::Transient(format!("reading the images answer: {}", e.without_url()))
        })?;
        let _ = progress.send(Report::Progress(60, Some("storing the image".into())));
        let first = answer.pointer("/data/0").cloned().unwrap_or(Value::Null);
        let accept = |head: &[u8]| check(Purpose::Image, head);
        let key_for = |kind: crate::storage::sniff::Kind| {
            Ok(Key::new(
                job.user_id,
                "generated",
                &format!("{}-{}", job.task_id, job.step),
                kind.extension,
            )?)
        };
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
                .ingest(&self.client, url, limit, accept, key_for)
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
        match job.kind {
            TaskKind::Image => self.image(job, progress, cancel).await,
            _ => self.chat(job, progress, cancel).await,
        }
    }
}

fn snippet(s: &str) -> String {
    s.chars().take(200).collect()
}
