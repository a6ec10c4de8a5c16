//! The broker seam: publish with confirmation, subscribe with prefetch, settle each
//! delivery exactly once. Two implementations built from the same [`Topology`]:
//! [`rabbitmq::RabbitBroker`] (lapin) and [`embedded::EmbeddedBroker`] (in-process,
//! persisted in SQLite so a crash loses no accepted message).

mod ack_window;
pub mod embedded;
pub mod envelope;
mod nodes;
pub mod rabbitmq;
pub mod settings;
pub mod topology;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

pub use envelope::{Envelope, EnvelopeError, Failure};

/// One message of the fan-out: its topic and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FanOut {
    pub topic: String,
    pub body: Vec<u8>,
}
pub use topology::{DelaySpec, QueueSpec, ResolvedQueue, Target, Topology};

use settings::{BrokerKind, BrokerSettings};

#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("broker unreachable: {0}")]
    Connection(String),
    #[error("message for {target} was unroutable: no queue is bound for it")]
    Unroutable { target: String },
    #[error("broker refused (nacked) the message for {target}")]
    Nacked { target: String },
    #[error("no publisher confirm within {0:?}")]
    ConfirmTimeout(Duration),
    #[error(transparent)]
    Envelope(#[from] EnvelopeError),
    #[error("broker protocol error: {0}")]
    Protocol(String),
    #[error("embedded broker store: {0}")]
    Store(String),
}

/// Why a message ended in its dead-letter queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadReason {
    /// The body was not a valid envelope.
    Malformed,
    /// The handler said retrying cannot help.
    Permanent,
    /// Every allowed attempt failed transiently.
    Exhausted,
    /// Its consumers kept dying while handling it (an abort, OOM or native crash: not a
    /// Rust panic, which is caught): quarantined so healthy traffic keeps flowing.
    CrashLoop,
    /// The broker dead-lettered it on its own (a reject by a foreign consumer, a TTL, a
    /// length limit, a quorum queue's delivery limit); found by the DLQ keeper.
    Broker,
}

impl DeadReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            DeadReason::Malformed => "malformed",
            DeadReason::Permanent => "permanent",
            DeadReason::Exhausted => "exhausted",
            DeadReason::CrashLoop => "crash_loop",
            DeadReason::Broker => "broker",
        }
    }

    pub fn parse(s: &str) -> Option<DeadReason> {
        [
            DeadReason::Malformed,
            DeadReason::Permanent,
            DeadReason::Exhausted,
            DeadReason::CrashLoop,
            DeadReason::Broker,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }
}

/// What travels with a dead letter (also as `x-conveyor-*` headers on RabbitMQ).
#[derive(Debug, Clone)]
pub struct DeadLetterInfo {
    pub reason: DeadReason,
    pub origin_queue: String,
    pub attempts: u32,
    pub last_error: String,
}

/// One message to publish: where, and its encoded envelope.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub target: Target,
    pub message_id: String,
    pub body: Vec<u8>,
    /// The envelope's trace context, also sent where the broker has headers.
    pub traceparent: Option<String>,
}

impl Outgoing {
    pub fn new(target: Target, envelope: &Envelope, limit: usize) -> Result<Self, EnvelopeError> {
        Ok(Outgoing {
            target,
            message_id: envelope.id.clone(),
            body: envelope.encode(limit)?,
            traceparent: envelope.traceparent.clone(),
        })
    }
}

#[async_trait]
pub trait Broker: Send + Sync + 'static {
    fn topology(&self) -> &Topology;

    /// The largest message body it takes (`broker.max_payload_bytes`): envelopes carry
    /// ids and parameters, never blobs.
    fn max_payload(&self) -> usize {
        self.topology().max_payload_bytes
    }

    /// Declares every exchange and queue of the topology; harmless to repeat.
    async fn declare(&self) -> Result<(), BrokerError>;

    /// Publishes persistently and returns once the broker confirmed every message.
    /// An unroutable, refused or unconfirmed message is an error, never silence; on error
    /// some messages of the batch may have been published (consumers deduplicate).
    async fn publish_batch(&self, messages: &[Outgoing]) -> Result<(), BrokerError>;

    /// Publishes messages of one `topic` to every process listening (the fan-out that
    /// carries the bus: live events, control notices, process reports), in order, as one
    /// batch (one confirm wait however many). Best effort: what rides it is stored or
    /// sent again, so a lost message is recovered elsewhere. See [`crate::bus`].
    async fn publish_events(&self, topic: &str, bodies: Vec<Vec<u8>>) -> Result<(), BrokerError>;

    /// This process's share of the fan-out: every message published by any process, with
    /// its topic (RabbitMQ: an exclusive auto-delete queue bound to `<ns>.events`, the
    /// topic in the routing key, re-bound after a reconnect). The stream ends only when
    /// the receiver is dropped.
    async fn subscribe_events(&self) -> Result<tokio::sync::mpsc::Receiver<FanOut>, BrokerError>;

    /// Starts consuming a work queue with its configured prefetch. The subscription
    /// reconnects by itself; deliveries come until it is cancelled.
    async fn subscribe(
        &self,
        queue: &'static QueueSpec,
    ) -> Result<Box<dyn Subscription>, BrokerError> {
        let prefetch = self.topology().queue(queue).prefetch;
        self.subscribe_at(queue, prefetch).await
    }

    /// [`subscribe`](Broker::subscribe) with `prefetch` from the first delivery on (a
    /// concurrency an operator set at run time: a consumer started after the change
    /// never takes more than it allows).
    async fn subscribe_at(
        &self,
        queue: &'static QueueSpec,
        prefetch: u16,
    ) -> Result<Box<dyn Subscription>, BrokerError>;

    /// Messages ready in the named queue (work queue, retry tier or DLQ).
    async fn depth(&self, queue_name: &str) -> Result<u64, BrokerError>;

    /// Takes up to `max` messages out of `queue`'s dead-letter queue: each is shown to
    /// `keep` and removed from the DLQ only once `keep` answered `Ok` (an `Err` puts it
    /// back and ends the round). Returns how many were removed.
    async fn drain_dead(
        &self,
        queue: &'static QueueSpec,
        max: usize,
        keep: &KeepDead,
    ) -> Result<usize, BrokerError>;

    /// A cheap liveness round trip, for readiness checks.
    async fn ping(&self) -> Result<(), BrokerError>;

    /// Which node each live connection uses (`publish`, `consume` → `host:port`), for
    /// readiness on a cluster; empty for a broker without nodes.
    async fn nodes(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// Closes connections; in-flight deliveries not yet settled go back to their queues.
    async fn close(&self);

    /// Deletes every queue and exchange of this namespace, messages included
    /// (test clean-up, decommissioning a namespace). Never touches other namespaces.
    async fn teardown(&self) -> Result<(), BrokerError>;
}

impl dyn Broker {
    /// Publishes one envelope.
    pub async fn publish(&self, target: Target, envelope: &Envelope) -> Result<(), BrokerError> {
        let limit = usize::MAX;
        self.publish_batch(&[Outgoing::new(target, envelope, limit)?])
            .await
    }
}

/// What a DLQ drain does with each message (see [`Broker::drain_dead`]).
pub type KeepDead =
    dyn Fn(DeadCopy) -> futures::future::BoxFuture<'static, Result<(), String>> + Send + Sync;

/// A message found in a dead-letter queue, with what its headers say of its death.
#[derive(Debug, Clone)]
pub struct DeadCopy {
    pub body: Vec<u8>,
    /// `x-conveyor-reason`: conveyor dead-lettered it (and recorded it first).
    pub conveyor_reason: Option<String>,
    /// RabbitMQ's own `x-death` reason (`rejected`, `expired`, `maxlen`,
    /// `delivery_limit`), its queue and count, when the broker dead-lettered it.
    pub broker_reason: Option<String>,
    pub broker_queue: Option<String>,
    pub broker_count: u32,
}

#[async_trait]
pub trait Subscription: Send {
    /// The next delivery, waiting as long as needed; `None` once cancelled.
    async fn next(&mut self) -> Option<Delivery>;
    /// Stops new deliveries. Deliveries already handed out can still be settled.
    async fn cancel(&mut self);
    /// Takes up to `prefetch` unsettled deliveries from now on; deliveries already
    /// handed out stay valid.
    async fn set_prefetch(&mut self, prefetch: u16) -> Result<(), BrokerError>;
}

/// The backend half of a delivery: how to settle it.
#[async_trait]
pub trait Settle: Send + Sync {
    async fn ack(self: Box<Self>) -> Result<(), BrokerError>;
    /// Sends `body` (the next attempt) to retry tier `tier` of the queue, then acks.
    async fn retry(self: Box<Self>, tier: usize, body: Vec<u8>) -> Result<(), BrokerError>;
    /// Sends `body` to the queue's DLQ with `info`, then acks.
    async fn dead_letter(
        self: Box<Self>,
        body: Vec<u8>,
        info: &DeadLetterInfo,
    ) -> Result<(), BrokerError>;
    /// Hands the message back for redelivery (shutdown, or dropped unsettled).
    fn requeue(self: Box<Self>);
}

/// A message handed to a consumer. Settling consumes it, so it is settled at most once;
/// dropping it unsettled hands it back to the queue.
pub struct Delivery {
    pub body: Vec<u8>,
    pub redelivered: bool,
    pub queue: &'static QueueSpec,
    /// The `traceparent` header (RabbitMQ), for an envelope that carries none.
    pub traceparent: Option<String>,
    settle: Option<Box<dyn Settle>>,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("queue", &self.queue.key)
            .field("redelivered", &self.redelivered)
            .field("bytes", &self.body.len())
            .finish()
    }
}

impl Delivery {
    pub fn new(
        queue: &'static QueueSpec,
        body: Vec<u8>,
        redelivered: bool,
        settle: Box<dyn Settle>,
    ) -> Self {
        Delivery {
            body,
            redelivered,
            queue,
            traceparent: None,
            settle: Some(settle),
        }
    }

    pub fn with_traceparent(mut self, traceparent: Option<String>) -> Self {
        self.traceparent = traceparent;
        self
    }

    /// `settle` is only `None` inside `drop`, after a consuming method took it.
    fn take(&mut self) -> Result<Box<dyn Settle>, BrokerError> {
        self.settle
            .take()
            .ok_or_else(|| BrokerError::Protocol("delivery already settled".into()))
    }

    pub async fn ack(mut self) -> Result<(), BrokerError> {
        self.take()?.ack().await
    }

    pub async fn retry(mut self, tier: usize, body: Vec<u8>) -> Result<(), BrokerError> {
        self.take()?.retry(tier, body).await
    }

    pub async fn dead_letter(
        mut self,
        body: Vec<u8>,
        info: &DeadLetterInfo,
    ) -> Result<(), BrokerError> {
        self.take()?.dead_letter(body, info).await
    }

    pub fn requeue(mut self) {
        if let Ok(s) = self.take() {
            s.requeue()
        }
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        if let Some(s) = self.settle.take() {
            s.requeue();
        }
    }
}

/// Connects the configured broker and declares the topology.
pub async fn connect(
    settings: &BrokerSettings,
    topology: Topology,
) -> anyhow::Result<Arc<dyn Broker>> {
    let broker: Arc<dyn Broker> = match settings.kind {
        BrokerKind::Rabbitmq => Arc::new(rabbitmq::RabbitBroker::new(settings, topology)),
        BrokerKind::Embedded => Arc::new(embedded::EmbeddedBroker::open(settings, topology).await?),
    };
    Ok(broker)
}

/// Moves a semaphore of `from` permits to `to`: adds the difference, or takes it back as
/// permits are released (held permits are never revoked: what runs finishes).
pub fn resize_permits(permits: &std::sync::Arc<tokio::sync::Semaphore>, from: usize, to: usize) {
    if to > from {
        permits.add_permits(to - from);
    } else if from > to {
        let (permits, fewer) = (permits.clone(), (from - to) as u32);
        tokio::spawn(async move {
            if let Ok(p) = permits.acquire_many_owned(fewer).await {
                p.forget();
            }
        });
    }
}

/// Messages of one work queue waiting: ready for a consumer, and parked in its retry
/// tiers (the gauges and the ops board read them alike).
pub async fn waiting(
    broker: &dyn Broker,
    queue: &ResolvedQueue,
) -> Result<(u64, u64), BrokerError> {
    let mut retrying = 0;
    for (_, tier) in &queue.retry {
        retrying += broker.depth(tier).await?;
    }
    Ok((broker.depth(&queue.name).await?, retrying))
}
