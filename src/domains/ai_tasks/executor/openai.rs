//! An OpenAI-compatible chat-completions client for text kinds: timeouts, a client-side
//! rate limit per provider, and errors classified by what retrying can change
//! (429, 5xx, timeouts and connection errors are transient; other 4xx permanent).

use std::num::NonZeroU32;
use std::time::Duration;

use async_trait::async_trait;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{ExecError, Executor, Job, Progress};
use crate::domains::ai_tasks::settings::OpenAiSettings;

pub struct OpenAi {
    client: reqwest::Client,
    url: String,
    model: String,
    api_key: String,
    limiter: DefaultDirectRateLimiter,
}

impl OpenAi {
    pub fn new(s: &OpenAiSettings) -> anyhow::Result<Self> {
        let per_second = NonZeroU32::new(s.requests_per_second).unwrap_or(NonZeroU32::MIN);
        Ok(OpenAi {
            client: reqwest::Client::builder()
                .timeout(Duration::from_millis(s.timeout_ms))
                .connect_timeout(Duration::from_secs(5))
                .build()?,
            url: format!("{}/chat/completions", s.base_url.trim_end_matches('/')),
            model: s.model.clone(),
            api_key: s.api_key.clone(),
            limiter: RateLimiter::direct(Quota::per_second(per_second)),
        })
    }
}

#[async_trait]
impl Executor for OpenAi {
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<serde_json::Value, ExecError> {
        tokio::select! {
            _ = cancel.cancelled() => return Err(ExecError::Canceled),
            _ = self.limiter.until_ready() => {}
        }
        let _ = progress.send((10, Some("sent to the model".into())));
        let body = json!({
            "model": self.model,
            "messages": [
                { "role": "system", "content": "You write short, punchy marketing copy for short videos." },
                { "role": "user", "content": job.prompt },
            ],
        });
        let mut req = self.client.post(&self.url).json(&body);
        if !self.api_key.is_empty() {
            req = req.bearer_auth(&self.api_key);
        }
        let resp = tokio::select! {
            _ = cancel.cancelled() => return Err(ExecError::Canceled),
            r = req.send() => r.map_err(|e| ExecError::Transient(format!("provider unreachable: {e}")))?,
        };
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| ExecError::Transient(format!("reading the provider's answer: {e}")))?;
        if status.as_u16() == 429 || status.is_server_error() {
            return Err(ExecError::Transient(format!(
                "provider answered {status}: {}",
                snippet(&text)
            )));
        }
        if !status.is_success() {
            return Err(ExecError::Permanent(format!(
                "provider answered {status}: {}",
                snippet(&text)
            )));
        }
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| ExecError::Transient(format!("provider answered invalid JSON: {e}")))?;
        let content = v
            .pointer("/choices/0/message/content")
            .and_then(|c| c.as_str())
            .ok_or_else(|| {
                ExecError::Permanent("provider answer has no choices[0].message.content".into())
            })?;
        let _ = progress.send((100, Some("model answered".into())));
        Ok(
            json!({ "text": content, "model": v.get("model").cloned().unwrap_or(json!(self.model)) }),
        )
    }
}

fn snippet(s: &str) -> String {
    s.chars().take(200).collect()
}
