//! `[dead_letters]`: replay pace, the keeper's interval, the needs-fix rule.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// `[dead_letters]`: operating the dead letters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterSettings {
    /// Replays per second, per process (API or CLI), so replaying a large backlog
    /// cannot flood the work queues it returns to.
    pub replay_per_second: u32,
    /// How often consumer processes drain their queues' DLQs into the table.
    pub keeper_interval_ms: u64,
    /// A letter replayed this many times that dies again is parked as `needs_fix`: a
    /// replay by filter skips it unless forced (0: never).
    pub needs_fix_after_replays: u32,
    /// Replays on a schedule, per queue (off by default).
    #[serde(default)]
    pub compensation: super::compensation::CompensationSettings,
}

impl DeadLetterSettings {
    /// What types cannot say, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.replay_per_second == 0 {
            return Err(ConfigError::Invalid {
                key: "dead_letters.replay_per_second",
                problem: "must be greater than 0".into(),
            });
        }
        self.compensation.validate()
    }
}
