//! `[dedupe]`: the claim store (Redis or in-process) and its leases.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DedupeKind {
    Embedded,
    Redis,
}

/// `[dedupe]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DedupeSettings {
    pub kind: DedupeKind,
    pub url: String,
    pub key_prefix: String,
    pub lease_ms: u64,
    pub done_ttl_secs: u64,
}

impl DedupeSettings {
    /// What types cannot say, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let redis_url = self.url.starts_with("redis://") || self.url.starts_with("rediss://");
        if self.kind == DedupeKind::Redis && !redis_url {
            return Err(ConfigError::Invalid {
                key: "dedupe.url",
                problem: "must start with redis:// or rediss://".into(),
            });
        }
        if self.lease_ms == 0 {
            return Err(ConfigError::Invalid {
                key: "dedupe.lease_ms",
                problem: "must be greater than 0".into(),
            });
        }
        Ok(())
    }
}
