//! The topology table: the only place queue and exchange names live.
//!
//! Domains name a queue by a typed constant ([`AI_SHORT`], …); the RabbitMQ backend turns
//! the table into declare calls, the embedded broker into tables, `conveyor topology`
//! into text and a Mermaid diagram. Every name derives from the namespace prefix so test
//! runs never collide.
//!
//! Per work queue `<ns>.<key>`:
//! - retry tiers `<ns>.<key>.retry.<delay>`: per-queue TTL, dead-lettering back to the work
//!   queue (never per-message TTLs in one queue: expiry happens only at the head);
//! - a dead-letter queue `<ns>.<key>.dlq` (no DLX of its own: no cycle).
//!
//! Business delays (`<ns>.delay.<key>`) use the same mechanism with one fixed delay.

use std::time::Duration;

use std::collections::BTreeMap;

use crate::config::{QueueOverride, QueueType, Settings};

/// A work queue consumers subscribe to.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct QueueSpec {
    /// Stable key: the queue's name without namespace, and its `[queues.<key>]` config table.
    pub key: &'static str,
    /// The consumer group (`conveyor consume <group>`) that runs it.
    pub group: &'static str,
    pub default_prefetch: u16,
    pub default_max_attempts: u32,
    pub purpose: &'static str,
}

/// A business timer: a message published here waits `delay`, then lands in `target`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DelaySpec {
    pub key: &'static str,
    pub delay: Duration,
    pub target: &'static QueueSpec,
    pub purpose: &'static str,
}

pub const AI_SHORT: QueueSpec = QueueSpec {
    key: "ai.short",
    group: "ai",
    default_prefetch: 32,
    default_max_attempts: 5,
    purpose: "short AI generation (copywriting, image)",
};
pub const AI_LONG: QueueSpec = QueueSpec {
    key: "ai.long",
    group: "ai",
    default_prefetch: 4,
    default_max_attempts: 3,
    purpose: "long AI generation (video, 3D)",
};
pub const AI_PIPELINE: QueueSpec = QueueSpec {
    key: "ai.pipeline",
    group: "ai",
    default_prefetch: 8,
    default_max_attempts: 5,
    purpose: "video-analysis pipeline steps",
};
pub const ORDERS_CREATE: QueueSpec = QueueSpec {
    key: "orders.create",
    group: "orders",
    default_prefetch: 64,
    default_max_attempts: 5,
    purpose: "flash-sale order rows written after the Redis stock check",
};
pub const ORDERS_EXPIRE: QueueSpec = QueueSpec {
    key: "orders.expire",
    group: "orders",
    default_prefetch: 64,
    default_max_attempts: 5,
    purpose: "cancel unpaid orders and return their stock",
};
pub const PAYMENTS_APPLY: QueueSpec = QueueSpec {
    key: "payments.apply",
    group: "payments",
    default_prefetch: 32,
    default_max_attempts: 8,
    purpose: "grant credits for verified payment events, exactly once",
};
pub const SEARCH_SYNC: QueueSpec = QueueSpec {
    key: "search.sync",
    group: "search",
    default_prefetch: 64,
    default_max_attempts: 8,
    purpose: "upsert/delete search documents",
};

pub const ORDER_PAYMENT_TIMEOUT: DelaySpec = DelaySpec {
    key: "orders.payment-timeout",
    delay: Duration::from_secs(30 * 60),
    target: &ORDERS_EXPIRE,
    purpose: "30-minute unpaid-order cancel",
};

/// Every work queue, in declaration order.
pub const QUEUES: &[&QueueSpec] = &[
    &AI_SHORT,
    &AI_LONG,
    &AI_PIPELINE,
    &ORDERS_CREATE,
    &ORDERS_EXPIRE,
    &PAYMENTS_APPLY,
    &SEARCH_SYNC,
];

/// Every business delay.
pub const DELAYS: &[&DelaySpec] = &[&ORDER_PAYMENT_TIMEOUT];

/// The consumer groups, for `conveyor consume <group>`.
pub fn groups() -> Vec<&'static str> {
    let mut g: Vec<_> = QUEUES.iter().map(|q| q.group).collect();
    g.dedup();
    g
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

    pub fn parse(key: &str) -> Option<Target> {
        match key.strip_prefix("delay:") {
            Some(k) => DELAYS.iter().find(|d| d.key == k).map(|d| Target::Delay(d)),
            None => QUEUES
                .iter()
                .find(|q| q.key == key)
                .map(|q| Target::Queue(q)),
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
}

#[derive(Debug, Clone)]
pub struct ResolvedDelay {
    pub spec: &'static DelaySpec,
    pub name: String,
}

/// The whole topology for one namespace.
#[derive(Debug, Clone)]
pub struct Topology {
    pub namespace: String,
    pub queue_type: QueueType,
    tiers: Vec<Duration>,
    overrides: BTreeMap<String, QueueOverride>,
    /// The declared work queues.
    pub queues: Vec<ResolvedQueue>,
    /// The declared business delays.
    pub delays: Vec<ResolvedDelay>,
}

impl Topology {
    /// Every queue and delay of the table.
    pub fn from_settings(settings: &Settings) -> Self {
        Self::from_settings_only(settings, QUEUES)
    }

    /// Only `queues` (and the delays feeding them) are declared and routable; a
    /// consumer-side subset, and how tests produce an unroutable message.
    pub fn from_settings_only(settings: &Settings, queues: &[&'static QueueSpec]) -> Self {
        let mut t = Topology {
            namespace: settings.broker.namespace.clone(),
            queue_type: settings.broker.queue_type,
            tiers: settings
                .broker
                .retry_tiers_ms
                .iter()
                .map(|ms| Duration::from_millis(*ms))
                .collect(),
            overrides: settings.queues.clone(),
            queues: Vec::new(),
            delays: Vec::new(),
        };
        t.queues = queues.iter().map(|spec| t.resolve(spec)).collect();
        t.delays = DELAYS
            .iter()
            .filter(|d| queues.iter().any(|q| q.key == d.target.key))
            .map(|spec| t.resolve_delay(spec))
            .collect();
        t
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
        }
    }

    fn resolve_delay(&self, spec: &'static DelaySpec) -> ResolvedDelay {
        ResolvedDelay {
            spec,
            name: format!("{}.delay.{}", self.namespace, spec.key),
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

    /// A plain-text listing for `conveyor topology`.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "namespace {} ({:?} queues)\nexchanges: {} (direct), {} (direct), {} (direct), {} (fanout)\n\n",
            self.namespace,
            self.queue_type,
            self.work_exchange(),
            self.delay_exchange(),
            self.dead_letter_exchange(),
            self.events_exchange()
        );
        for q in &self.queues {
            out.push_str(&format!(
                "{}  [group {}] prefetch {} max attempts {}: {}\n  retry: {}\n  dead letters: {}\n",
                q.name,
                q.spec.group,
                q.prefetch,
                q.max_attempts,
                q.spec.purpose,
                q.retry
                    .iter()
                    .map(|(_, n)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                q.dlq
            ));
        }
        for d in &self.delays {
            out.push_str(&format!(
                "{}  waits {} then feeds {}: {}\n",
                d.name,
                human(d.spec.delay),
                self.queue(d.spec.target).name,
                d.spec.purpose
            ));
        }
        out
    }

    /// A Mermaid flowchart of exchanges, queues and dead-letter paths.
    pub fn mermaid(&self) -> String {
        let id = |s: &str| s.replace(['.', '-'], "_");
        let work = self.work_exchange();
        let delay = self.delay_exchange();
        let dlx = self.dead_letter_exchange();
        let mut out = String::from("flowchart LR\n");
        out.push_str(&format!(
            "  {}{{{{{work}}}}}\n  {}{{{{{delay}}}}}\n  {}{{{{{dlx}}}}}\n",
            id(&work),
            id(&delay),
            id(&dlx)
        ));
        for q in &self.queues {
            out.push_str(&format!(
                "  {} --> {}[{}]\n",
                id(&work),
                id(&q.name),
                q.name
            ));
            out.push_str(&format!(
                "  {} -. reject/exhausted .-> {} --> {}[({})]\n",
                id(&q.name),
                id(&dlx),
                id(&q.dlq),
                q.dlq
            ));
            for (d, r) in &q.retry {
                out.push_str(&format!(
                    "  {} --> {}[{}] -. TTL {} .-> {}\n",
                    id(&delay),
                    id(r),
                    r,
                    human(*d),
                    id(&q.name)
                ));
            }
        }
        for d in &self.delays {
            let target = &self.queue(d.spec.target).name;
            out.push_str(&format!(
                "  {} --> {}[{}] -. TTL {} .-> {}\n",
                id(&delay),
                id(&d.name),
                d.name,
                human(d.spec.delay),
                id(target)
            ));
        }
        out
    }
}

/// `1500ms` → "1500ms", `5s` → "5s", `120s` → "2m", `30m` → "30m".
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn topology() -> Topology {
        let s =
            Settings::load_from(std::path::Path::new("/nonexistent"), "none", Vec::new()).unwrap();
        Topology::from_settings(&s)
    }

    #[test]
    fn names_derive_from_namespace() {
        let t = topology();
        let q = t.queue(&AI_SHORT);
        assert_eq!(q.name, "conveyor.ai.short");
        assert_eq!(q.dlq, "conveyor.ai.short.dlq");
        assert_eq!(q.retry[0].1, "conveyor.ai.short.retry.1s");
        assert_eq!(q.retry[3].1, "conveyor.ai.short.retry.2m");
        assert_eq!(
            t.delay(&ORDER_PAYMENT_TIMEOUT).name,
            "conveyor.delay.orders.payment-timeout"
        );
    }

    #[test]
    fn retry_tiers_grow_then_stay_on_the_longest() {
        let t = topology();
        let q = t.queue(&AI_SHORT);
        assert_eq!(t.retry_tier(&q, 1), 0);
        assert_eq!(t.retry_tier(&q, 2), 1);
        assert_eq!(t.retry_tier(&q, 99), q.retry.len() - 1);
    }

    #[test]
    fn targets_round_trip_through_their_keys() {
        for q in QUEUES {
            assert_eq!(
                Target::parse(&Target::Queue(q).key()),
                Some(Target::Queue(q))
            );
        }
        let d = Target::Delay(&ORDER_PAYMENT_TIMEOUT);
        assert_eq!(Target::parse(&d.key()), Some(d));
        assert_eq!(Target::parse("nope"), None);
    }

    #[test]
    fn mermaid_names_every_queue() {
        let t = topology();
        let m = t.mermaid();
        for q in &t.queues {
            assert!(m.contains(&q.dlq));
        }
    }
}
