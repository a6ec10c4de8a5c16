//! Notices about API keys every API instance acts on at once (a revoked key: drop its
//! cached identity, close its streams), on the bus topic [`KEY_NOTICES`], so they reach
//! every instance within the fan-out's latency rather than a cache's TTL.

use serde::{Deserialize, Serialize};

use crate::broker::Broker;
use crate::bus::{self, Topic};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyNotice {
    /// The key with this hash no longer works: forget it, close what it opened.
    KeyRevoked { key_hash: String },
    /// The key with this hash changed (rotated: it now expires): forget its cached
    /// identity, so the next request reads the change.
    KeyChanged { key_hash: String },
}

impl KeyNotice {
    /// The hash of the key it is about.
    pub fn key_hash(&self) -> &str {
        match self {
            KeyNotice::KeyRevoked { key_hash } | KeyNotice::KeyChanged { key_hash } => key_hash,
        }
    }

    /// Whether it ends what was opened with the key of this hash.
    pub fn ends(&self, key_hash: Option<&str>) -> bool {
        match self {
            KeyNotice::KeyRevoked { key_hash: revoked } => key_hash == Some(revoked.as_str()),
            KeyNotice::KeyChanged { .. } => false,
        }
    }
}

/// The topic key notices travel on.
pub const KEY_NOTICES: Topic<KeyNotice> = Topic::new("keys", 64);

/// Tells every API instance (this one included); a lost notice is bounded by the
/// identity cache's TTL and the streams' key checks.
pub async fn announce(broker: &dyn Broker, notice: KeyNotice) {
    if let Err(e) = bus::publish(broker, &KEY_NOTICES, &[notice]).await {
        tracing::warn!(error = %e, "key notice not announced (caches expire on their own)");
    }
}
