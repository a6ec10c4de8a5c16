//! `[consumer]`: the consume loop's shutdown, polling, fence and crash-loop quarantine.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// `[consumer]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsumerSettings {
    pub shutdown_grace_ms: u64,
    /// How often each consumer reads its queue's concurrency set at run time.
    pub settings_poll_ms: u64,
    pub db_fence: bool,
    /// Fence requests (checks, writes) merged into one statement.
    pub fence_batch: usize,
    /// Fence rows older than this are trimmed by housekeeping (see base.toml for the rule).
    pub fence_retention_days: u32,
    /// A message redelivered this many times after its consumer died is dead-lettered
    /// with reason `crash_loop`; 0 turns the quarantine off.
    pub crash_loop_after: u32,
}

impl ConsumerSettings {
    /// What types cannot say, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.fence_batch == 0 {
            return Err(ConfigError::Invalid {
                key: "consumer.fence_batch",
                problem: "must be greater than 0".into(),
            });
        }
        Ok(())
    }
}
