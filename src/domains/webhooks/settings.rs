//! `[webhooks]`: where tenants' webhooks may go, how long a delivery may take, how long
//! it is retried, when a failing endpoint is disabled.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;
use crate::settings::{Section, Settings};

pub const SECTION: Section = Section::new("webhooks", |s| {
    WebhookSettings::from_settings(s).map(|_| ())
});

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSettings {
    /// `http://` endpoints are taken (development); production wants `https://` only.
    pub allow_http: bool,
    /// Endpoints on loopback, private, link-local (cloud metadata) and other non-public
    /// addresses are taken (development and tests). Off, such an address is refused when
    /// the endpoint is saved and again when a delivery connects (so a name that later
    /// resolves elsewhere, DNS rebinding, cannot slip through).
    pub allow_private_targets: bool,
    /// Endpoints per tenant.
    pub max_endpoints: u32,
    /// One attempt's deadline (connect, send, answer).
    pub timeout_ms: u64,
    /// Deliveries to one endpoint at once per consumer process: a slow endpoint holds at
    /// most this many of the process's slots.
    pub per_endpoint_concurrency: u32,
    /// How long a delivery waits for its endpoint's slot before it steps aside (back
    /// later, no attempt counted) so the other endpoints' deliveries go on.
    pub busy_wait_ms: u64,
    /// A delivery is retried until this long after it was made (then FAILED; retried by
    /// hand from the delivery log).
    pub give_up_after_secs: u64,
    /// An endpoint whose every delivery failed for this long is disabled (its owner
    /// enables it again).
    pub disable_after_secs: u64,
    /// How long a rotated-out secret still signs deliveries beside the new one.
    pub secret_overlap_secs: u64,
}

impl WebhookSettings {
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        let s: WebhookSettings = settings.section(SECTION.key)?;
        let positive = [
            ("webhooks.max_endpoints", u64::from(s.max_endpoints)),
            ("webhooks.timeout_ms", s.timeout_ms),
            (
                "webhooks.per_endpoint_concurrency",
                u64::from(s.per_endpoint_concurrency),
            ),
            ("webhooks.give_up_after_secs", s.give_up_after_secs),
            ("webhooks.disable_after_secs", s.disable_after_secs),
        ];
        if let Some((key, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(ConfigError::Invalid {
                key,
                problem: "must be at least 1".into(),
            });
        }
        Ok(s)
    }

    /// How long a new delivery is retried.
    pub fn give_up(&self) -> chrono::Duration {
        chrono::Duration::seconds(self.give_up_after_secs as i64)
    }
}
