//! `[ops]`: the console's sampling, its alert thresholds and where notices go.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// `[ops]`: the operations console's board and its alerts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpsSettings {
    /// How often each API instance samples queues, rates and panels (the console's
    /// refresh, the alerts' resolution).
    pub sample_interval_ms: u64,
    /// How much of the per-queue history the throughput charts keep.
    pub history_secs: u64,
    /// The console's address as operators reach it, put in alert notices ("" for none).
    pub link: String,
    pub alerts: AlertSettings,
    /// Where alert notices go.
    #[serde(default)]
    pub receivers: Vec<AlertReceiver>,
}

/// `[ops.alerts]`: the thresholds, each with how long it must hold before it fires.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertSettings {
    /// Backlog (ready + retrying) above this many times the consumers' concurrency.
    pub backlog_factor: f64,
    pub backlog_for_secs: u64,
    /// The oldest waiting work older than this.
    pub oldest_secs: f64,
    pub oldest_for_secs: u64,
    /// Consumed below this fraction of published, while at least `consume_min_rate`
    /// messages per second are published.
    pub consume_ratio: f64,
    pub consume_min_rate: f64,
    pub consume_for_secs: u64,
    /// Processed / (processed + dead-lettered) below this, while at least
    /// `success_min_rate` messages per second finish.
    pub success_ratio: f64,
    pub success_min_rate: f64,
    pub success_for_secs: u64,
}

/// `[[ops.receivers]]`: a webhook for alert notices, in the shape it expects.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertReceiver {
    pub url: String,
    #[serde(default)]
    pub format: AlertFormat,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertFormat {
    /// `{"status", "id", "rule", "queue", "summary", "value", "threshold", "fired_at",
    /// "resolved_at", "link"}`: `id` is the episode, the same in its firing and
    /// resolved notices (receivers de-duplicate on `id` and `status`).
    #[default]
    Generic,
    /// A DingTalk group robot (`msgtype: markdown`).
    Dingtalk,
    /// A WeCom group robot (`msgtype: markdown`).
    Wecom,
}

impl OpsSettings {
    /// What types cannot say, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.sample_interval_ms < 100 {
            return bad("ops.sample_interval_ms", "must be at least 100");
        }
        if self.history_secs * 1000 < self.sample_interval_ms {
            return bad("ops.history_secs", "must cover at least one sample");
        }
        for r in &self.receivers {
            if !(r.url.starts_with("http://") || r.url.starts_with("https://")) {
                return bad(
                    "ops.receivers",
                    "each url must start with http:// or https://",
                );
            }
        }
        Ok(())
    }
}

/// `Err` naming `key`.
fn bad(key: &'static str, problem: &str) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid {
        key,
        problem: problem.to_owned(),
    })
}
