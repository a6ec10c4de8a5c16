//! The topology table: the only place queue and exchange names live.
//!
//! Each domain declares its queues and delays as typed constants ([`QueueSpec`],
//! [`DelaySpec`]) in its own folder; the registry hands them all to [`Topology::new`].
//! The RabbitMQ backend turns the topology into declare calls, the embedded broker into
//! tables, `conveyor topology` into text and a Mermaid diagram. Every name derives from
//! the namespace prefix here, so test runs never collide.
//!
//! Per work queue `<ns>.<key>`:
//! - retry tiers `<ns>.<key>.retry.<delay>`: per-queue TTL, dead-lettering back to the work
//!   queue (never per-message TTLs in one queue: expiry happens only at the head);
//! - a dead-letter queue `<ns>.<key>.dlq` (no DLX of its own: no cycle).
//!
//! Business delays (`<ns>.delay.<key>`) use the same mechanism with one fixed delay.
//!
//! Files: this one (specs and the table), [`render`] (the listing and the diagram).

mod render;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::time::Duration;

use super::settings::{BrokerSettings, QueueOverride, QueueType};
pub use render::human;

/// A work queue consumers subscribe to.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct QueueSpec {
    /// Stable key: the queue's name without namespace, and its `[queues.<key>]` config table.
    pub key: &'static str,
    /// The consumer group (`conveyor consume <group>`) that runs it.
    pub group: &'static str,
    pub default_prefetch: u16,
    pub default_max_attempts: u32,
    /// Deliveries per call of a batch handler (1 for single-message handlers) and how
    /// long to wait for a batch to fill after its first delivery.
    pub default_batch: u16,
    pub default_linger_ms: u64,
    /// Batch-handler calls one process runs at once (`None`: as many as the prefetch
    /// window holds, the broker's bound on unsettled messages; search sync's 2 is like
    /// a bulk client's concurrent requests).
    pub default_in_flight: Option<u16>,
    pub purpose: &'static str,
}

impl QueueSpec {
    /// A queue with the defaults: prefetch 16, 5 attempts, one message per handler call.
    pub const fn new(key: &'static str, group: &'static str, purpose: &'static str) -> Self {
        QueueSpec {
            key,
            group,
            default_prefetch: 16,
            default_max_attempts: 5,
            default_batch: 1,
            default_linger_ms: 0,
            default_in_flight: None,
            purpose,
        }
    }

    /// Deliveries held unacknowledged per consumer (its concurrency).
    pub const fn prefetch(mut self, n: u16) -> Self {
        self.default_prefetch = n;
        self
    }

    /// Deliveries before a failing message is dead-lettered.
    pub const fn max_attempts(mut self, n: u32) -> Self {
        self.default_max_attempts = n;
        self
    }

    /// For a batch handler: deliveries per call, and how long a batch waits to fill.
    pub const fn batch(mut self, n: u16, linger_ms: u64) -> Self {
        self.default_batch = n;
        self.default_linger_ms = linger_ms;
        self
    }

    /// For a batch handler: calls one process runs at once.
    pub const fn in_flight(mut self, n: u16) -> Self {
        self.default_in_flight = Some(n);
        self
    }
}

/// A business timer: a message published here waits `delay`, then lands in `target`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DelaySpec {
    pub key: &'static str,
    pub delay: Duration,
    pub target: &'static QueueSpec,
    pub purpose: &'static str,
}

/// Where a message is published: a work queue directly, or a delay that feeds one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Queue(&'static QueueSpec),
    Delay(&'static DelaySpec),
}

impl Target {
    /// The stable key stored in outbox rows: `ai.short` or `delay:orders.payment-timeout`.
    pub fn key(&self) -> String {
        match self {
            Target::Queue(q) => q.key.to_owned(),
            Target::Delay(d) => format!("delay:{}", d.key),
        }
    }
}

/// A work queue with its names and limits resolved for one namespace and config.
#[derive(Debug, Clone)]
pub struct ResolvedQueue {
    pub spec: &'static QueueSpec,
    pub name: String,
    pub dlq: String,
    /// (delay, queue name), shortest first.
    pub retry: Vec<(Duration, String)>,
    pub prefetch: u16,
    pub max_attempts: u32,
    /// For a batch handler: deliveries per batch, the wait for one to fill, and how many
    /// batches one process handles at once.
    pub batch: usize,
    pub linger: Duration,
    pub in_flight: usize,
}

#[derive(Debug, Clone)]
pub struct ResolvedDelay {
    pub spec: &'static DelaySpec,
    /// `<ns>.delay.<key>.<delay>`: a changed delay is a new queue, never a redeclare
    /// with other arguments.
    pub name: String,
    /// The spec's delay, or `[queues."<key>"] delay_ms`.
    pub delay: Duration,
}

/// The whole topology for one namespace.
#[derive(Debug, Clone)]
pub struct Topology {
    pub namespace: String,
    pub queue_type: QueueType,
    /// `broker.max_payload_bytes`.
    pub max_payload_bytes: usize,
    tiers: Vec<Duration>,
    overrides: BTreeMap<String, QueueOverride>,
    /// Every queue and delay this build knows (declared or not), for parsing targets.
    known_queues: Vec<&'static QueueSpec>,
    known_delays: Vec<&'static DelaySpec>,
    /// The declared work queues.
    pub queues: Vec<ResolvedQueue>,
    /// The declared business delays.
    pub delays: Vec<ResolvedDelay>,
}

impl Topology {
    /// Every queue and delay given, declared and routable.
    pub fn new(
        settings: &BrokerSettings,
        overrides: &BTreeMap<String, QueueOverride>,
        queues: &[&'static QueueSpec],
        delays: &[&'static DelaySpec],
    ) -> Self {
        Self::declaring_only(settings, overrides, queues, delays, queues)
    }

    /// Knows `queues` and `delays`, but declares (makes routable) only `declared` and the
    /// delays feeding them: how tests produce an unroutable message.
    pub fn declaring_only(
        settings: &BrokerSettings,
        overrides: &BTreeMap<String, QueueOverride>,
        queues: &[&'static QueueSpec],
        delays: &[&'static DelaySpec],
        declared: &[&'static QueueSpec],
    ) -> Self {
        let mut t = Topology {
            namespace: settings.namespace.clone(),
            queue_type: settings.queue_type,
            max_payload_bytes: settings.max_payload_bytes,
            tiers: settings
                .retry_tiers_ms
                .iter()
                .map(|ms| Duration::from_millis(*ms))
                .collect(),
            overrides: overrides.clone(),
            known_queues: queues.to_vec(),
            known_delays: delays.to_vec(),
            queues: Vec::new(),
            delays: Vec::new(),
        };
        t.queues = declared.iter().map(|spec| t.resolve(spec)).collect();
        t.delays = delays
            .iter()
            .filter(|d| declared.iter().any(|q| q.key == d.target.key))
            .map(|spec| t.resolve_delay(spec))
            .collect();
        t
    }

    /// The target an outbox row or a dead letter names by its key (see [`Target::key`]);
    /// `None` for one this build does not know.
    pub fn target(&self, key: &str) -> Option<Target> {
        match key.strip_prefix("delay:") {
            Some(k) => self
                .known_delays
                .iter()
                .find(|d| d.key == k)
                .map(|d| Target::Delay(d)),
            None => self
                .known_queues
                .iter()
                .find(|q| q.key == key)
                .map(|q| Target::Queue(q)),
        }
    }

    /// The work queue with this key (`ai.short`), if this build knows it.
    pub fn queue_spec(&self, key: &str) -> Option<&'static QueueSpec> {
        match self.target(key)? {
            Target::Queue(q) => Some(q),
            Target::Delay(_) => None,
        }
    }

    /// The consumer groups of the known queues, in declaration order.
    pub fn groups(&self) -> Vec<&'static str> {
        let mut g: Vec<&'static str> = Vec::new();
        for q in &self.known_queues {
            if !g.contains(&q.group) {
                g.push(q.group);
            }
        }
        g
    }

    fn resolve(&self, spec: &'static QueueSpec) -> ResolvedQueue {
        let name = format!("{}.{}", self.namespace, spec.key);
        let over = self.overrides.get(spec.key).cloned().unwrap_or_default();
        ResolvedQueue {
            spec,
            dlq: format!("{name}.dlq"),
            retry: self
                .tiers
                .iter()
                .map(|d| (*d, format!("{name}.retry.{}", human(*d))))
                .collect(),
            name,
            prefetch: over.prefetch.unwrap_or(spec.default_prefetch),
            max_attempts: over.max_attempts.unwrap_or(spec.default_max_attempts),
            batch: usize::from(over.batch.unwrap_or(spec.default_batch).max(1)),
            linger: Duration::from_millis(over.linger_ms.unwrap_or(spec.default_linger_ms)),
            // Unbounded by default: batch handlers answer message by message, so the
            // prefetch window (messages unsettled) is the bound, not a count of calls.
            in_flight: usize::from(
                over.in_flight
                    .or(spec.default_in_flight)
                    .unwrap_or(over.prefetch.unwrap_or(spec.default_prefetch))
                    .max(1),
            ),
        }
    }

    fn resolve_delay(&self, spec: &'static DelaySpec) -> ResolvedDelay {
        let delay = self
            .overrides
            .get(spec.key)
            .and_then(|o| o.delay_ms)
            .map_or(spec.delay, Duration::from_millis);
        ResolvedDelay {
            spec,
            name: format!("{}.delay.{}.{}", self.namespace, spec.key, human(delay)),
            delay,
        }
    }

    /// Names and limits of a work queue (declared or not).
    pub fn queue(&self, spec: &'static QueueSpec) -> ResolvedQueue {
        self.queues
            .iter()
            .find(|q| q.spec.key == spec.key)
            .cloned()
            .unwrap_or_else(|| self.resolve(spec))
    }

    /// Name of a business delay queue (declared or not).
    pub fn delay(&self, spec: &'static DelaySpec) -> ResolvedDelay {
        self.resolve_delay(spec)
    }

    /// Direct exchange for work: routing key = work queue name.
    pub fn work_exchange(&self) -> String {
        format!("{}.work", self.namespace)
    }
    /// Direct exchange for retry tiers and business delays: routing key = delay queue name.
    pub fn delay_exchange(&self) -> String {
        format!("{}.delay", self.namespace)
    }
    /// Direct exchange for dead letters: routing key = DLQ name.
    pub fn dead_letter_exchange(&self) -> String {
        format!("{}.dlx", self.namespace)
    }
    /// Fanout exchange for progress events; each API instance binds its own queue.
    pub fn events_exchange(&self) -> String {
        format!("{}.events", self.namespace)
    }

    /// Index of the retry tier for a message about to make attempt `next_attempt` (1-based
    /// retries: the first retry waits the shortest tier; later ones stay on the longest).
    pub fn retry_tier(&self, queue: &ResolvedQueue, next_attempt: u32) -> usize {
        (next_attempt.saturating_sub(1) as usize).min(queue.retry.len().saturating_sub(1))
    }
}
