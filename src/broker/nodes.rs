//! The nodes of a RabbitMQ deployment (one address, or every node of a cluster), the
//! order a connection tries them in, and which node each live connection reached.
//!
//! A connection starts at the node the last connection reached and moves on to the next
//! on failure, so after a node dies every connection of the process settles on one
//! survivor instead of each probing the dead node first. A stopped or paused
//! (`pause_minority`) node refuses connections at once; a frozen one accepts TCP and
//! never answers, which `broker.connect_timeout_ms` bounds.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

pub(super) struct Nodes {
    addresses: Vec<String>,
    /// `host:port` of each address: what readiness and metrics show (never credentials).
    labels: Vec<String>,
    /// The address the last successful connection reached: the next one starts there.
    preferred: AtomicUsize,
    /// Role of a connection (`publish`, `consume`) → index of the node it reached.
    reached: Mutex<BTreeMap<&'static str, usize>>,
}

impl Nodes {
    pub(super) fn new(addresses: Vec<String>) -> Nodes {
        let labels = addresses.iter().map(|a| label(a)).collect();
        Nodes {
            addresses,
            labels,
            preferred: AtomicUsize::new(0),
            reached: Mutex::default(),
        }
    }

    /// Every address with its index, in the order a new connection tries them.
    pub(super) fn in_order(&self) -> impl Iterator<Item = (usize, &str)> {
        let n = self.addresses.len();
        let start = self.preferred.load(Ordering::Relaxed) % n.max(1);
        (0..n).map(move |i| {
            let idx = (start + i) % n;
            (idx, self.addresses[idx].as_str())
        })
    }

    pub(super) fn label(&self, idx: usize) -> &str {
        &self.labels[idx]
    }

    pub(super) fn len(&self) -> usize {
        self.addresses.len()
    }

    /// The long-lived connection of `role` (`publish`, `consume`) now uses node `idx`:
    /// later connections start there.
    pub(super) fn reached(&self, role: &'static str, idx: usize) {
        self.preferred.store(idx, Ordering::Relaxed);
        let previous = self
            .reached
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(role, idx);
        if previous != Some(idx) {
            if let Some(old) = previous {
                metrics::gauge!("conveyor_broker_node", "role" => role, "node" => self.labels[old].clone())
                    .set(0.0);
                tracing::warn!(role, from = %self.labels[old], to = %self.labels[idx], "broker connection moved to another node");
            }
            metrics::gauge!("conveyor_broker_node", "role" => role, "node" => self.labels[idx].clone())
                .set(1.0);
        }
        metrics::counter!("conveyor_broker_connections_opened_total", "role" => role, "node" => self.labels[idx].clone())
            .increment(1);
    }

    /// The node a connection of `role` last reached.
    pub(super) fn of(&self, role: &str) -> Option<&str> {
        let idx = *self
            .reached
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(role)?;
        Some(self.label(idx))
    }
}

/// `host:port` of an AMQP URI (`amqp://user:pw@host:port/vhost`), without credentials.
fn label(address: &str) -> String {
    match address.parse::<lapin::uri::AMQPUri>() {
        Ok(uri) => format!("{}:{}", uri.authority.host, uri.authority.port),
        Err(_) => "(unparsable address)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tries_from_the_last_reached_node_and_wraps() {
        let nodes = Nodes::new(vec![
            "amqp://guest:secret@a:5681/%2f".into(),
            "amqp://guest:secret@b:5682/%2f".into(),
            "amqp://c".into(),
        ]);
        let order = |n: &Nodes| n.in_order().map(|(i, _)| i).collect::<Vec<_>>();
        assert_eq!(order(&nodes), vec![0, 1, 2]);
        nodes.reached("publish", 1);
        assert_eq!(order(&nodes), vec![1, 2, 0]);
        assert_eq!(nodes.of("publish"), Some("b:5682"));
        assert_eq!(nodes.of("consume"), None);
        assert_eq!(nodes.label(2), "c:5672", "the default port");
    }
}
