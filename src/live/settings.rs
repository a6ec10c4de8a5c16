//! `[live]`: the WebSocket and SSE streams' limits and timers.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// `[live]`: WebSocket and SSE progress streams.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveSettings {
    pub ticket_ttl_secs: u64,
    pub allowed_origins: Vec<String>,
    pub max_message_bytes: usize,
    pub max_subscriptions: usize,
    pub ping_interval_ms: u64,
    pub idle_timeout_ms: u64,
    pub send_timeout_ms: u64,
    pub buffer_bytes: usize,
    /// An open stream re-reads its key this often (and at the key's expiry), so a
    /// revocation whose notice never arrived ends it within this.
    pub key_check_secs: u64,
    /// How often the things followed on this instance get the events computed between
    /// stored ones (a waiting task's place in line); 0 turns them off.
    #[serde(default = "refresh_ms")]
    pub refresh_ms: u64,
}

fn refresh_ms() -> u64 {
    2000
}

impl LiveSettings {
    /// What types cannot say, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=3600).contains(&self.key_check_secs) {
            return Err(ConfigError::Invalid {
                key: "live.key_check_secs",
                problem: "must be between 1 and 3600".into(),
            });
        }
        Ok(())
    }
}
