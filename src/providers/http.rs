//! What every HTTP provider shares: the client with its timeouts, the base URL and key,
//! this process's request rate, the fleet's [`Gate`], and how a failed answer is classed
//! (429, 408, 5xx, timeouts and resets are transient; other 4xx permanent). A 429 that
//! says when to come back (within `max_retry_wait_ms`) pauses the provider for the whole
//! fleet; the call waits and is sent again.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::ExecError;
use super::fleet_slots::FleetPlace;
use super::gate::{self, Gate};
use crate::providers::settings::ProviderSettings;

/// Rate-limited answers waited out in one attempt before it fails as transient.
const MAX_RATE_LIMITED: usize = 4;

/// A call's places (in this process, in the fleet), given back when dropped.
pub struct Slot {
    _local: Option<OwnedSemaphorePermit>,
    _fleet: Option<FleetPlace>,
}

pub struct ProviderHttp {
    pub client: reqwest::Client,
    base: String,
    api_key: String,
    /// A stream silent this long is given up on.
    pub idle: Duration,
    limiter: DefaultDirectRateLimiter,
    gate: Gate,
    max_retry_wait: Duration,
    /// This process's cap on calls in flight (`max_concurrent`).
    slots: Option<Arc<Semaphore>>,
}

impl ProviderHttp {
    pub fn new(s: &ProviderSettings, gate: Gate) -> anyhow::Result<Self> {
        let per_second = NonZeroU32::new(s.requests_per_second).unwrap_or(NonZeroU32::MIN);
        Ok(ProviderHttp {
            client: reqwest::Client::builder()
                .timeout(Duration::from_millis(s.timeout_ms))
                .connect_timeout(Duration::from_secs(5))
                .build()?,
            base: s.base_url.trim_end_matches('/').to_owned(),
            api_key: s.api_key.clone(),
            idle: Duration::from_millis(s.stream_idle_ms.max(1)),
            limiter: RateLimiter::direct(Quota::per_second(per_second)),
            gate,
            max_retry_wait: Duration::from_millis(s.max_retry_wait_ms),
            slots: (s.max_concurrent > 0)
                .then(|| Arc::new(Semaphore::new(s.max_concurrent as usize))),
        })
    }

    /// A place among this process's calls in flight (`max_concurrent`) and then among
    /// the fleet's (`fleet_max_concurrent`), held by the caller for the whole call (a
    /// stream's included); waits while a cap is full.
    pub async fn slot(&self, cancel: &CancellationToken) -> Result<Slot, ExecError> {
        let local = match &self.slots {
            None => None,
            Some(slots) => tokio::select! {
                _ = cancel.cancelled() => return Err(ExecError::Canceled),
                permit = slots.clone().acquire_owned() => permit.ok(),
            },
        };
        let fleet = self.gate.place(cancel).await?;
        Ok(Slot {
            _local: local,
            _fleet: fleet,
        })
    }

    /// `GET {base}{path}`, with the key as a bearer token.
    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.authorized(self.client.get(format!("{}{path}", self.base)))
    }

    /// `POST {base}{path}` with `body`, and the key as a bearer token.
    pub fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.authorized(self.client.post(format!("{}{path}", self.base)).json(body))
    }

    /// `POST {base}{path}` with a multipart `form`, and the key as a bearer token.
    pub fn post_form(&self, path: &str, form: reqwest::multipart::Form) -> reqwest::RequestBuilder {
        self.authorized(
            self.client
                .post(format!("{}{path}", self.base))
                .multipart(form),
        )
    }

    /// The key as a bearer token, when there is one.
    fn authorized(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if self.api_key.is_empty() {
            req
        } else {
            req.bearer_auth(&self.api_key)
        }
    }
    /// Sends the request `build` makes once the fleet's gate (its requests, and
    /// `tokens`, the call's estimated tokens) and this process's limit allow; a
    /// successful answer, or the failure classed.
    pub async fn send(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
        tokens: usize,
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, ExecError> {
        for _ in 0..MAX_RATE_LIMITED {
            self.gate.ready(tokens, cancel).await?;
            tokio::select! {
                _ = cancel.cancelled() => return Err(ExecError::Canceled),
                _ = self.limiter.until_ready() => {}
            }
            let resp = tokio::select! {
                _ = cancel.cancelled() => return Err(ExecError::Canceled),
                r = build().send() => r.map_err(|e| ExecError::Transient(format!("provider unreachable: {}", e.without_url())))?,
            };
            let status = resp.status();
            // On the provider call's span (the router's), when traces are on.
            tracing::Span::current()
                .record("http.response.status_code", i64::from(status.as_u16()));
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
                metrics::counter!("conveyor_provider_rate_limited_total", "provider" => self.gate.provider().to_owned())
                    .increment(1);
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
}

/// The start of a provider's answer, for the log.
pub fn snippet(s: &str) -> String {
    s.chars().take(200).collect()
}
