//! The dedupe fast path: claim a message id before processing it, mark it done after.
//! Redis (`SET NX PX` with a lease) in production, an in-process map when embedded.
//! It is only the fast path: the database fence (`processed_messages`) is the truth, so
//! a lost key (eviction, failover) can never double an effect.
//!
//! Leases are short (`dedupe.lease_ms`, 10 s) and renewed by the consumer runtime every
//! third of it while the handler runs: a long handler keeps its claim, and the claims of a
//! consumer that died lapse within one lease, so its redelivered messages run again in
//! seconds.

pub mod embedded;
pub mod redis;
pub mod settings;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::dedupe::settings::DedupeKind;

use crate::dedupe::settings::DedupeSettings;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// We hold the lease: process the message.
    Acquired,
    /// Another consumer holds a live lease on it right now.
    InProgress,
    /// Already processed.
    Done,
}

#[derive(Debug, thiserror::Error)]
pub enum DedupeError {
    #[error("dedupe store unreachable: {0}")]
    Unavailable(String),
}

#[async_trait]
pub trait DedupeStore: Send + Sync + 'static {
    /// Claims `key` for `lease`; the returned token releases it.
    async fn claim(&self, key: &str, lease: Duration) -> Result<(Claim, String), DedupeError>;
    /// Marks `key` processed for `ttl`.
    async fn complete(&self, key: &str, ttl: Duration) -> Result<(), DedupeError>;
    /// [`claim`](Self::claim) for several keys, answers in order (one round trip where
    /// the store can: a batch of deliveries).
    async fn claim_many(
        &self,
        keys: &[&str],
        lease: Duration,
    ) -> Result<Vec<(Claim, String)>, DedupeError> {
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            out.push(self.claim(key, lease).await?);
        }
        Ok(out)
    }
    /// [`complete`](Self::complete) for several keys.
    async fn complete_many(&self, keys: &[&str], ttl: Duration) -> Result<(), DedupeError> {
        for key in keys {
            self.complete(key, ttl).await?;
        }
        Ok(())
    }
    /// Extends our lease on `key` to `lease` from now, while its handler runs; `false` when
    /// the lease is no longer ours (it lapsed and another consumer took it, or it is done).
    async fn renew(&self, key: &str, token: &str, lease: Duration) -> Result<bool, DedupeError>;
    /// Drops our lease (after a failure) so a retry can claim it; another holder's lease is kept.
    async fn release(&self, key: &str, token: &str) -> Result<(), DedupeError>;
    /// Forgets `key` whatever its state (tests, and operators replaying a message).
    async fn forget(&self, key: &str) -> Result<(), DedupeError>;
    async fn ping(&self) -> Result<(), DedupeError>;
}

/// The configured store, its keys under `<key_prefix>:`.
pub async fn connect(settings: &DedupeSettings) -> anyhow::Result<Arc<dyn DedupeStore>> {
    Ok(match settings.kind {
        DedupeKind::Embedded => Arc::new(embedded::EmbeddedDedupe::new(&settings.key_prefix)),
        DedupeKind::Redis => {
            Arc::new(redis::RedisDedupe::connect(&settings.url, &settings.key_prefix).await?)
        }
    })
}

/// The value stored for a processed key.
pub(crate) const DONE: &str = "done";
