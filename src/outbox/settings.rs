//! `[outbox]`: the relay's rounds and backoff.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// `[outbox]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutboxSettings {
    pub batch_size: u64,
    pub poll_interval_ms: u64,
    pub linger_ms: u64,
    pub retry_min_ms: u64,
    pub retry_max_ms: u64,
}

impl OutboxSettings {
    /// What types cannot say, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.batch_size == 0 {
            return Err(ConfigError::Invalid {
                key: "outbox.batch_size",
                problem: "must be greater than 0".into(),
            });
        }
        Ok(())
    }
}
