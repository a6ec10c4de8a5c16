//! `[broker]` (the broker, its connections and retry tiers) and `[queues.<key>]` (a
//! queue's concurrency, attempts, batches and delay).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BrokerKind {
    Embedded,
    Rabbitmq,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueType {
    Classic,
    Quorum,
}

/// `[broker]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokerSettings {
    pub kind: BrokerKind,
    /// The one-address form; ignored when `urls` lists any.
    pub url: String,
    /// The nodes of a RabbitMQ cluster, in order of preference: a connection tries them
    /// from the one it last reached and moves to the next on failure.
    #[serde(default)]
    pub urls: Vec<String>,
    /// How long one node may take to accept a connection before the next is tried (a
    /// frozen node accepts TCP but never answers the AMQP handshake).
    pub connect_timeout_ms: u64,
    pub namespace: String,
    pub queue_type: QueueType,
    pub publish_timeout_ms: u64,
    pub heartbeat_secs: u16,
    /// The largest AMQP frame this side proposes (the broker's own limit wins if lower);
    /// a connection's read and write buffers hold 32 frames each. Always proposed (an
    /// address's `?frame_max=` overrides it): left to the broker, lapin grows its
    /// buffers to the broker's 128 KiB frames after the handshake by writing them
    /// through, 8 MiB resident per connection from the start.
    pub frame_max_bytes: u32,
    pub retry_tiers_ms: Vec<u64>,
    pub max_payload_bytes: usize,
    pub embedded_path: PathBuf,
    pub reconnect_min_ms: u64,
    pub reconnect_max_ms: u64,
    /// The broker's `consumer_timeout`: handler deadlines must stay below it.
    pub consumer_timeout_ms: u64,
}

impl BrokerSettings {
    /// The broker's addresses: `urls` when it lists any, else `url`.
    pub fn addresses(&self) -> Vec<String> {
        if self.urls.is_empty() {
            vec![self.url.clone()]
        } else {
            self.urls.clone()
        }
    }
}

/// `[queues.<key>]`: per-queue concurrency and attempt limits.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueOverride {
    pub prefetch: Option<u16>,
    pub max_attempts: Option<u32>,
    /// For a queue with a batch handler: deliveries per batch (keep `prefetch` at least
    /// this, or batches never fill) and how long a batch waits to fill after its first.
    pub batch: Option<u16>,
    pub linger_ms: Option<u64>,
    /// For a queue with a batch handler: batches handled at once by one process (2 by
    /// default). Like a bulk client's concurrent requests, it bounds what the handler's
    /// backend sees, whatever the batch size.
    pub in_flight: Option<u16>,
    /// For a business delay (`orders.payment-timeout`): how long it waits.
    pub delay_ms: Option<u64>,
}

impl BrokerSettings {
    /// What types cannot say, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.kind == BrokerKind::Rabbitmq {
            let key = if self.urls.is_empty() {
                "broker.url"
            } else {
                "broker.urls"
            };
            let amqp = |u: &String| u.starts_with("amqp://") || u.starts_with("amqps://");
            if !self.addresses().iter().all(amqp) {
                return bad(key, "each address must start with amqp:// or amqps://");
            }
            if self.connect_timeout_ms == 0 {
                return bad("broker.connect_timeout_ms", "must be greater than 0");
            }
            // AMQP 0-9-1's smallest frame.
            if self.frame_max_bytes < 4096 {
                return bad("broker.frame_max_bytes", "must be at least 4096");
            }
        }
        let ns_ok = !self.namespace.is_empty()
            && self
                .namespace
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !ns_ok {
            return bad(
                "broker.namespace",
                "must be non-empty ASCII letters, digits, '-', '_' or '.'",
            );
        }
        if self.retry_tiers_ms.is_empty() || self.retry_tiers_ms.contains(&0) {
            return bad(
                "broker.retry_tiers_ms",
                "must list at least one delay, each above 0 ms",
            );
        }
        if self.publish_timeout_ms == 0 {
            return bad("broker.publish_timeout_ms", "must be greater than 0");
        }
        if self.max_payload_bytes == 0 {
            return bad("broker.max_payload_bytes", "must be greater than 0");
        }
        if self.reconnect_min_ms == 0 || self.reconnect_max_ms < self.reconnect_min_ms {
            return bad(
                "broker.reconnect_max_ms",
                "needs 0 < reconnect_min_ms <= reconnect_max_ms",
            );
        }
        Ok(())
    }
}

/// `[queues]`: each override's numbers above 0.
pub fn validate_queues(queues: &BTreeMap<String, QueueOverride>) -> Result<(), ConfigError> {
    for (name, q) in queues {
        if q.prefetch == Some(0) || q.max_attempts == Some(0) || q.delay_ms == Some(0) {
            return Err(ConfigError::Invalid {
                key: "queues",
                problem: format!(
                    "queues.{name}: prefetch, max_attempts and delay_ms must be greater than 0"
                ),
            });
        }
    }
    Ok(())
}

/// The environment lists of `[broker]` (comma-separated in `CONVEYOR__BROKER__…`).
pub const LISTS: &[crate::config::ListKey] = &[
    crate::config::ListKey::plain("broker.retry_tiers_ms"),
    crate::config::ListKey::plain("broker.urls"),
];

/// `Err` naming `key`.
fn bad(key: &'static str, problem: &str) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid {
        key,
        problem: problem.to_owned(),
    })
}
