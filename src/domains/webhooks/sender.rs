//! One attempt of a delivery: the event's body POSTed to the endpoint, signed the
//! Standard Webhooks way with the endpoint's secret (and, during a rotation, with the
//! secret it replaces), through a client that connects only to allowed addresses
//! ([`super::target`]), follows no redirect and uses no proxy.

use std::time::{Duration, Instant};

use chrono::Utc;

use super::entity::{endpoint, event};
use super::target::{self, GuardedResolver};
use crate::standard_webhooks;

/// The first bytes of an answer kept in the delivery log.
pub const RESPONSE_BYTES: usize = 1024;

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub status: Option<u16>,
    pub response: Option<String>,
    pub latency_ms: i32,
    /// Why no answer came (a timeout, a refused connection, a forbidden address).
    pub error: Option<String>,
}

impl Attempt {
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

pub struct Sender {
    client: reqwest::Client,
    allow_private: bool,
}

impl Sender {
    pub fn new(timeout: Duration, allow_private: bool) -> anyhow::Result<Self> {
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(concat!("conveyor-webhooks/", env!("CARGO_PKG_VERSION")));
        if !allow_private {
            builder = builder.dns_resolver(std::sync::Arc::new(GuardedResolver::default()));
        }
        Ok(Sender {
            client: builder.build()?,
            allow_private,
        })
    }

    /// Sends `ev` to `to`, signed now.
    pub async fn send(&self, to: &endpoint::Model, ev: &event::Model) -> Attempt {
        let started = Instant::now();
        let elapsed = |s: Instant| s.elapsed().as_millis().min(i32::MAX as u128) as i32;
        let failed = |error: String| Attempt {
            status: None,
            response: None,
            latency_ms: elapsed(started),
            error: Some(error),
        };
        let url = match reqwest::Url::parse(&to.url) {
            Ok(u) => u,
            Err(e) => return failed(format!("the endpoint's URL is not a URL: {e}")),
        };
        if !self.allow_private
            && let Some(ip) = target::literal_forbidden(&url)
        {
            return failed(format!("{ip} is not a public address: refused"));
        }
        let now = Utc::now();
        let timestamp = now.timestamp();
        let body = ev.payload.as_bytes();
        let mut signatures = Vec::with_capacity(2);
        // The current secret, and the one a rotation replaced while it overlaps.
        let previous = to
            .previous_secret
            .as_ref()
            .filter(|_| to.previous_until.is_some_and(|u| u > now));
        for secret in std::iter::once(&to.secret).chain(previous) {
            match standard_webhooks::sign(secret, &ev.id, timestamp, body) {
                Ok(s) => signatures.push(s),
                Err(e) => return failed(format!("signing: {e}")),
            }
        }
        let request = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .header("webhook-id", &ev.id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signatures.join(" "))
            .body(ev.payload.clone());
        let mut response = match request.send().await {
            Ok(r) => r,
            Err(e) => return failed(describe(&e)),
        };
        let status = response.status().as_u16();
        // The first bytes only: a huge or endless answer is not read.
        let mut head: Vec<u8> = Vec::new();
        while head.len() < RESPONSE_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => head.extend_from_slice(&chunk),
                Ok(None) | Err(_) => break,
            }
        }
        head.truncate(RESPONSE_BYTES);
        // At most as many characters as bytes: fits the log's column.
        let response = String::from_utf8_lossy(&head).into_owned();
        Attempt {
            status: Some(status),
            response: (!response.is_empty()).then_some(response),
            latency_ms: elapsed(started),
            error: None,
        }
    }
}

/// A failed request in a few words (reqwest's text names the URL; the log has it).
fn describe(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    let text = if detail.is_empty() {
        what.to_owned()
    } else {
        format!("{what}: {detail}")
    };
    text.chars().take(480).collect()
}
