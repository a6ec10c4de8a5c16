//! RabbitMQ backend (lapin 4). Separate connections for publishing and consuming, both
//! re-established with backoff; persistent messages with `mandatory` and publisher
//! confirms awaited as a window, never one by one; manual acks; retries and dead letters
//! are published (confirmed) before the original delivery is acked.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt as _;
use lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions,
    BasicPublishOptions, BasicQosOptions, ConfirmSelectOptions, ExchangeDeclareOptions,
    QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{
    BasicProperties, Channel, Confirmation, Connection, ConnectionProperties, ExchangeKind,
};
use tokio::sync::Mutex;

use super::ack_window::AckWindow;
use super::nodes::Nodes;
use super::topology::{ResolvedQueue, Target, Topology};
use super::{
    Broker, BrokerError, DeadLetterInfo, Delivery, Outgoing, QueueSpec, Settle, Subscription,
};
use crate::config::{BrokerSettings, QueueType};

/// Bound on broker round trips that have no deadline of their own (declare, cancel,
/// close): a wedged channel must not hang shutdown (lapin#409).
const OP_TIMEOUT: Duration = Duration::from_secs(10);

async fn bounded<T>(
    what: &str,
    f: impl std::future::Future<Output = Result<T, BrokerError>>,
) -> Result<T, BrokerError> {
    tokio::time::timeout(OP_TIMEOUT, f)
        .await
        .map_err(|_| BrokerError::Connection(format!("{what}: no answer within {OP_TIMEOUT:?}")))?
}

/// How long a quorum queue tolerates redeliveries of one message (consumer crashes, not
/// handler failures, which go through retry tiers) before dead-lettering it: RabbitMQ
/// 3.10 has no default limit, 4.x uses 20.
const QUORUM_DELIVERY_LIMIT: i32 = 20;

pub struct RabbitBroker {
    inner: Arc<Inner>,
}

struct Inner {
    settings: BrokerSettings,
    topology: Topology,
    nodes: Nodes,
    publisher: Mutex<Option<(Arc<Connection>, Channel)>>,
    consumer_conn: Mutex<Option<Arc<Connection>>>,
    /// Set by `close`: no reconnecting afterwards. A straggler (a late event publish,
    /// a subscription retrying) would otherwise reconnect and re-declare the topology,
    /// undoing a teardown that followed the close.
    closed: std::sync::atomic::AtomicBool,
}

fn err(e: lapin::Error) -> BrokerError {
    if e.is_io_error() || !e.is_amqp_soft_error() {
        BrokerError::Connection(e.to_string())
    } else {
        BrokerError::Protocol(e.to_string())
    }
}

impl RabbitBroker {
    async fn teardown_unbounded(&self) -> Result<(), BrokerError> {
        // A connection of its own, which declares nothing (and works after `close`).
        let (conn, _) = self.inner.connect("teardown").await?;
        let result = self.delete_all(&conn).await;
        let _ = conn.close(200, "torn down".into()).await;
        result
    }

    async fn delete_all(&self, conn: &Connection) -> Result<(), BrokerError> {
        let ch = conn.create_channel().await.map_err(err)?;
        let t = &self.inner.topology;
        let mut queues: Vec<String> = Vec::new();
        for q in &t.queues {
            queues.push(q.name.clone());
            queues.push(q.dlq.clone());
            queues.extend(q.retry.iter().map(|(_, n)| n.clone()));
        }
        queues.extend(t.delays.iter().map(|d| d.name.clone()));
        for q in queues {
            ch.queue_delete(
                q.as_str().into(),
                lapin::options::QueueDeleteOptions::default(),
            )
            .await
            .map_err(err)?;
        }
        for x in [
            t.work_exchange(),
            t.delay_exchange(),
            t.dead_letter_exchange(),
            t.events_exchange(),
        ] {
            ch.exchange_delete(
                x.as_str().into(),
                lapin::options::ExchangeDeleteOptions::default(),
            )
            .await
            .map_err(err)?;
        }
        let _ = ch.close(200, "torn down".into()).await;
        Ok(())
    }

    /// Creates the broker; connections are opened on first use and re-opened after loss.
    pub fn new(settings: &BrokerSettings, topology: Topology) -> Self {
        RabbitBroker {
            inner: Arc::new(Inner {
                settings: settings.clone(),
                topology,
                nodes: Nodes::new(settings.addresses()),
                publisher: Mutex::new(None),
                consumer_conn: Mutex::new(None),
                closed: Default::default(),
            }),
        }
    }
}

impl Inner {
    /// A connection to the first node that answers, starting at the one the last
    /// long-lived connection reached (see [`Nodes`]), and that node's index.
    async fn connect(&self, role: &str) -> Result<(Connection, usize), BrokerError> {
        let mut failures = Vec::new();
        for (idx, address) in self.nodes.in_order() {
            match self.connect_to(address, role).await {
                Ok(conn) => return Ok((conn, idx)),
                Err(e) => failures.push(format!("{}: {e}", self.nodes.label(idx))),
            }
        }
        Err(BrokerError::Connection(if self.nodes.len() == 1 {
            failures.concat()
        } else {
            format!("no broker node reachable ({})", failures.join("; "))
        }))
    }

    async fn connect_to(&self, address: &str, role: &str) -> Result<Connection, String> {
        let mut uri: lapin::uri::AMQPUri = address
            .parse()
            .map_err(|e: String| format!("bad broker address: {e}"))?;
        if uri.query.heartbeat.is_none() {
            uri.query.heartbeat = Some(self.settings.heartbeat_secs);
        }
        let name = format!(
            "conveyor-{role}-{}@{}",
            std::process::id(),
            self.topology.namespace
        );
        let props = ConnectionProperties::default().with_connection_name(name.into());
        let limit = Duration::from_millis(self.settings.connect_timeout_ms);
        match tokio::time::timeout(limit, Connection::connect_uri(uri, props)).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {limit:?}")),
        }
    }

    /// The confirm-mode publishing channel, (re)connecting and declaring as needed.
    async fn publish_channel(&self) -> Result<Channel, BrokerError> {
        let mut guard = self.publisher.lock().await;
        if let Some((conn, ch)) = guard.as_ref()
            && conn.status().connected()
            && ch.status().connected()
        {
            return Ok(ch.clone());
        }
        *guard = None;
        self.ensure_open()?;
        let (conn, node) = self.connect("publish").await?;
        let conn = Arc::new(conn);
        bounded("declaring the topology", declare(&conn, &self.topology)).await?;
        let ch = conn.create_channel().await.map_err(err)?;
        ch.confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(err)?;
        *guard = Some((conn, ch.clone()));
        self.nodes.reached("publish", node);
        Ok(ch)
    }

    /// A throwaway channel on the publishing connection (opened if need be), for calls
    /// that may close their channel (a passive declare of a missing queue) or must not
    /// share it (`basic_get`: whatever is left unacked goes back when it closes).
    async fn scratch_channel(&self) -> Result<Channel, BrokerError> {
        self.publish_channel().await?;
        let conn = {
            let guard = self.publisher.lock().await;
            guard.as_ref().map(|(c, _)| c.clone())
        }
        .ok_or_else(|| BrokerError::Connection("publisher connection lost".into()))?;
        conn.create_channel().await.map_err(err)
    }

    fn ensure_open(&self) -> Result<(), BrokerError> {
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(BrokerError::Connection("broker closed".into()));
        }
        Ok(())
    }

    async fn forget_publisher(&self) {
        *self.publisher.lock().await = None;
    }

    /// Drops `conn` from the cache if it is still the shared consumer connection: a
    /// channel could not be opened or used on it, so it may be dead without lapin having
    /// noticed yet (its status says connected until the heartbeat misses). The next
    /// consumer to start opens a fresh one instead of waiting on this one again.
    async fn forget_consumer_connection(&self, conn: &Arc<Connection>) {
        let mut guard = self.consumer_conn.lock().await;
        if guard.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            *guard = None;
        }
    }

    /// A channel on the shared consumer connection, set up by `setup`, each part
    /// within [`OP_TIMEOUT`]. If the channel cannot be opened or set up, the connection
    /// is forgotten (see [`Inner::forget_consumer_connection`]).
    async fn consumer_channel<T, F, Fut>(&self, what: &str, setup: F) -> Result<T, BrokerError>
    where
        F: FnOnce(Channel) -> Fut,
        Fut: std::future::Future<Output = Result<T, BrokerError>>,
    {
        let conn = bounded("connecting a consumer", self.consumer_connection()).await?;
        let result = bounded(what, async {
            let ch = conn.create_channel().await.map_err(err)?;
            setup(ch).await
        })
        .await;
        if result.is_err() {
            self.forget_consumer_connection(&conn).await;
        }
        result
    }

    async fn consumer_connection(&self) -> Result<Arc<Connection>, BrokerError> {
        let mut guard = self.consumer_conn.lock().await;
        if let Some(conn) = guard.as_ref()
            && conn.status().connected()
        {
            return Ok(conn.clone());
        }
        *guard = None;
        self.ensure_open()?;
        let (conn, node) = self.connect("consume").await?;
        let conn = Arc::new(conn);
        bounded("declaring the topology", declare(&conn, &self.topology)).await?;
        *guard = Some(conn.clone());
        self.nodes.reached("consume", node);
        Ok(conn)
    }

    fn route(&self, target: Target) -> (String, String) {
        match target {
            Target::Queue(q) => (
                self.topology.work_exchange(),
                self.topology.queue(q).name.clone(),
            ),
            Target::Delay(d) => (
                self.topology.delay_exchange(),
                self.topology.delay(d).name.clone(),
            ),
        }
    }

    /// Publishes every message, then awaits all confirms together within the timeout.
    async fn publish_all(&self, items: Vec<Publish>) -> Result<(), BrokerError> {
        let ch = self.publish_channel().await?;
        let result = self.publish_on(&ch, items).await;
        if matches!(
            result,
            Err(BrokerError::Connection(_)) | Err(BrokerError::ConfirmTimeout(_))
        ) {
            // The channel may be wedged (lapin#409): start afresh next time.
            self.forget_publisher().await;
        }
        result
    }

    async fn publish_on(&self, ch: &Channel, items: Vec<Publish>) -> Result<(), BrokerError> {
        let timeout = Duration::from_millis(self.settings.publish_timeout_ms);
        let work = async {
            let mut confirms = Vec::with_capacity(items.len());
            for item in &items {
                let mut props = BasicProperties::default()
                    .with_delivery_mode(2)
                    .with_content_type("application/json".into())
                    .with_message_id(item.message_id.as_str().into());
                if let Some(h) = &item.headers {
                    props = props.with_headers(h.clone());
                }
                let confirm = ch
                    .basic_publish(
                        item.exchange.as_str().into(),
                        item.routing_key.as_str().into(),
                        BasicPublishOptions {
                            mandatory: item.mandatory,
                            ..Default::default()
                        },
                        &item.body,
                        props,
                    )
                    .await
                    .map_err(err)?;
                confirms.push(confirm);
            }
            let results = futures::future::join_all(confirms).await;
            for (item, res) in items.iter().zip(results) {
                match res.map_err(err)? {
                    Confirmation::Ack(None) => {}
                    Confirmation::Ack(Some(_)) => {
                        return Err(BrokerError::Unroutable {
                            target: item.routing_key.clone(),
                        });
                    }
                    Confirmation::Nack(_) => {
                        return Err(BrokerError::Nacked {
                            target: item.routing_key.clone(),
                        });
                    }
                    Confirmation::NotRequested => {
                        return Err(BrokerError::Protocol("publisher confirms are off".into()));
                    }
                }
            }
            Ok(())
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| BrokerError::ConfirmTimeout(timeout))?
    }
}

struct Publish {
    /// Unroutable is an error (work); events may have no listener.
    mandatory: bool,
    exchange: String,
    routing_key: String,
    message_id: String,
    body: Vec<u8>,
    headers: Option<FieldTable>,
}

/// A DLQ message's death, read from its headers.
fn dead_copy(body: Vec<u8>, headers: Option<&FieldTable>) -> super::DeadCopy {
    let text = |v: &AMQPValue| match v {
        AMQPValue::LongString(s) => Some(s.to_string()),
        AMQPValue::ShortString(s) => Some(s.to_string()),
        _ => None,
    };
    let get = |k: &str| headers.and_then(|h| h.inner().get(k)).and_then(text);
    // x-death: an array of tables, the most recent death first.
    let death = headers
        .and_then(|h| h.inner().get("x-death"))
        .and_then(|v| match v {
            AMQPValue::FieldArray(a) => a.as_slice().first().cloned(),
            _ => None,
        })
        .and_then(|v| match v {
            AMQPValue::FieldTable(t) => Some(t),
            _ => None,
        });
    let field = |k: &str| death.as_ref().and_then(|t| t.inner().get(k)).and_then(text);
    let count = death
        .as_ref()
        .and_then(|t| t.inner().get("count"))
        .and_then(|v| match v {
            AMQPValue::LongLongInt(n) => u32::try_from(*n).ok(),
            AMQPValue::LongInt(n) => u32::try_from(*n).ok(),
            _ => None,
        })
        .unwrap_or(0);
    super::DeadCopy {
        body,
        conveyor_reason: get("x-conveyor-reason"),
        broker_reason: field("reason"),
        broker_queue: field("queue"),
        broker_count: count,
    }
}

fn long_str(s: &str) -> AMQPValue {
    AMQPValue::LongString(s.into())
}

fn ms(d: Duration) -> AMQPValue {
    AMQPValue::LongInt(i32::try_from(d.as_millis()).unwrap_or(i32::MAX))
}

/// Declares the whole topology on a short-lived channel. Idempotent; a queue whose
/// arguments changed fails with PRECONDITION_FAILED, which names the queue.
async fn declare(conn: &Connection, t: &Topology) -> Result<(), BrokerError> {
    let ch = conn.create_channel().await.map_err(err)?;
    let durable = ExchangeDeclareOptions {
        durable: true,
        ..Default::default()
    };
    for (name, kind) in [
        (t.work_exchange(), ExchangeKind::Direct),
        (t.delay_exchange(), ExchangeKind::Direct),
        (t.dead_letter_exchange(), ExchangeKind::Direct),
        (t.events_exchange(), ExchangeKind::Fanout),
    ] {
        ch.exchange_declare(name.as_str().into(), kind, durable, FieldTable::default())
            .await
            .map_err(err)?;
    }
    let quorum = t.queue_type == QueueType::Quorum;
    let base_args = || {
        let mut a = FieldTable::default();
        if quorum {
            a.insert("x-queue-type".into(), long_str("quorum"));
        }
        a
    };
    // A quorum queue dead-letters at most once by default: a message expiring from a
    // retry tier while its leader changes could vanish. At least once needs
    // `reject-publish` overflow (no length limit is set, so it never refuses).
    let dead_letters_safely = |mut a: FieldTable| {
        if quorum {
            a.insert("x-dead-letter-strategy".into(), long_str("at-least-once"));
            a.insert("x-overflow".into(), long_str("reject-publish"));
        }
        a
    };
    let declare_bound = |name: String, args: FieldTable, exchange: String| {
        let ch = ch.clone();
        async move {
            ch.queue_declare(name.as_str().into(), QueueDeclareOptions::durable(), args)
                .await
                .map_err(|e| BrokerError::Protocol(format!("declaring queue {name}: {e}")))?;
            ch.queue_bind(
                name.as_str().into(),
                exchange.as_str().into(),
                name.as_str().into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(err)
        }
    };
    for q in &t.queues {
        declare_bound(q.dlq.clone(), base_args(), t.dead_letter_exchange()).await?;
        let mut args = base_args();
        args.insert(
            "x-dead-letter-exchange".into(),
            long_str(&t.dead_letter_exchange()),
        );
        args.insert("x-dead-letter-routing-key".into(), long_str(&q.dlq));
        if quorum {
            args.insert(
                "x-delivery-limit".into(),
                AMQPValue::LongInt(QUORUM_DELIVERY_LIMIT),
            );
        }
        declare_bound(q.name.clone(), dead_letters_safely(args), t.work_exchange()).await?;
        for (delay, name) in &q.retry {
            declare_bound(
                name.clone(),
                dead_letters_safely(ttl_args(base_args(), *delay, t, &q.name)),
                t.delay_exchange(),
            )
            .await?;
        }
    }
    for d in &t.delays {
        let target = &t.queue(d.spec.target).name;
        declare_bound(
            d.name.clone(),
            dead_letters_safely(ttl_args(base_args(), d.delay, t, target)),
            t.delay_exchange(),
        )
        .await?;
    }
    let _ = ch.close(200, "declared".into()).await;
    Ok(())
}

/// A delay queue: every message waits the queue's TTL, then dead-letters into `target`.
fn ttl_args(mut args: FieldTable, delay: Duration, t: &Topology, target: &str) -> FieldTable {
    args.insert("x-message-ttl".into(), ms(delay));
    args.insert(
        "x-dead-letter-exchange".into(),
        long_str(&t.work_exchange()),
    );
    args.insert("x-dead-letter-routing-key".into(), long_str(target));
    args
}

#[async_trait]
impl Broker for RabbitBroker {
    fn topology(&self) -> &Topology {
        &self.inner.topology
    }

    async fn declare(&self) -> Result<(), BrokerError> {
        // Declares on a fresh publisher connection, or again on the live one.
        let ch = self.inner.publish_channel().await?;
        drop(ch);
        let guard = self.inner.publisher.lock().await;
        match guard.as_ref() {
            Some((conn, _)) => declare(conn, &self.inner.topology).await,
            None => Err(BrokerError::Connection("publisher connection lost".into())),
        }
    }

    async fn publish_batch(&self, messages: &[Outgoing]) -> Result<(), BrokerError> {
        let items = messages
            .iter()
            .map(|m| {
                let (exchange, routing_key) = self.inner.route(m.target);
                Publish {
                    mandatory: true,
                    exchange,
                    routing_key,
                    message_id: m.message_id.clone(),
                    body: m.body.clone(),
                    headers: None,
                }
            })
            .collect();
        self.inner.publish_all(items).await
    }

    async fn publish_events(&self, bodies: Vec<Vec<u8>>) -> Result<(), BrokerError> {
        if bodies.is_empty() {
            return Ok(());
        }
        let exchange = self.inner.topology.events_exchange();
        let items = bodies
            .into_iter()
            .map(|body| Publish {
                mandatory: false,
                exchange: exchange.clone(),
                routing_key: String::new(),
                message_id: String::new(),
                body,
                headers: None,
            })
            .collect();
        self.inner.publish_all(items).await
    }

    async fn subscribe_events(&self) -> Result<tokio::sync::mpsc::Receiver<Vec<u8>>, BrokerError> {
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        let inner = self.inner.clone();
        // Bound before returning: events published from now on reach this listener.
        let mut bound = Some(bind_events(&inner).await?);
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(inner.settings.reconnect_min_ms);
            while !tx.is_closed() {
                let result = match bound.take() {
                    Some(b) => forward_events(b, &tx).await,
                    None => match bind_events(&inner).await {
                        Ok(b) => {
                            backoff = Duration::from_millis(inner.settings.reconnect_min_ms);
                            forward_events(b, &tx).await
                        }
                        Err(e) => Err(e),
                    },
                };
                match result {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::warn!(error = %e, ?backoff, "event listener lost its connection; re-binding");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2)
                            .min(Duration::from_millis(inner.settings.reconnect_max_ms));
                    }
                }
            }
        });
        Ok(rx)
    }

    async fn subscribe(
        &self,
        queue: &'static QueueSpec,
    ) -> Result<Box<dyn Subscription>, BrokerError> {
        let resolved = self.inner.topology.queue(queue).clone();
        let mut sub = RabbitSubscription {
            inner: self.inner.clone(),
            spec: queue,
            queue: Arc::new(resolved),
            live: None,
            draining: None,
            backoff: Duration::from_millis(self.inner.settings.reconnect_min_ms),
            cancelled: false,
        };
        match sub.open().await {
            Ok(()) => {}
            // The connection went while this consumer started (an unreachable broker at
            // start-up already failed the topology declare): `next` reconnects with
            // backoff, as after any later loss, instead of stopping the process.
            Err(BrokerError::Connection(e)) => {
                tracing::warn!(queue = %sub.queue.name, error = %e, "consumer not started yet; reconnecting");
            }
            Err(e) => return Err(e),
        }
        Ok(Box::new(sub))
    }

    async fn depth(&self, queue_name: &str) -> Result<u64, BrokerError> {
        let tmp = self.inner.scratch_channel().await?;
        let q = tmp
            .queue_declare(
                queue_name.into(),
                QueueDeclareOptions {
                    passive: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .map_err(err)?;
        let _ = tmp.close(200, "ok".into()).await;
        Ok(u64::from(q.message_count()))
    }

    async fn drain_dead(
        &self,
        queue: &'static QueueSpec,
        max: usize,
        keep: &super::KeepDead,
    ) -> Result<usize, BrokerError> {
        let dlq = self.inner.topology.queue(queue).dlq;
        let ch = self.inner.scratch_channel().await?;
        let mut taken = 0;
        while taken < max {
            let Some(got) = ch
                .basic_get(
                    dlq.as_str().into(),
                    lapin::options::BasicGetOptions { no_ack: false },
                )
                .await
                .map_err(err)?
            else {
                break;
            };
            let d = got.delivery;
            let copy = dead_copy(d.data.clone(), d.properties.headers().as_ref());
            match keep(copy).await {
                Ok(()) => {
                    d.acker.ack(BasicAckOptions::default()).await.map_err(err)?;
                    taken += 1;
                }
                Err(e) => {
                    tracing::warn!(queue = %dlq, error = %e, "dead letter kept in its DLQ for now");
                    let _ = d
                        .acker
                        .nack(BasicNackOptions {
                            requeue: true,
                            ..Default::default()
                        })
                        .await;
                    break;
                }
            }
        }
        let _ = ch.close(200, "ok".into()).await;
        Ok(taken)
    }

    async fn ping(&self) -> Result<(), BrokerError> {
        self.inner.publish_channel().await.map(|_| ())
    }

    async fn nodes(&self) -> Vec<(&'static str, String)> {
        let inner = &self.inner;
        // A connection being opened holds its lock (up to connect_timeout_ms per node):
        // readiness waits a moment (a publish holds it briefly), not for the connect.
        let wait = Duration::from_millis(200);
        let publishing = tokio::time::timeout(wait, inner.publisher.lock())
            .await
            .is_ok_and(|g| g.as_ref().is_some_and(|(c, _)| c.status().connected()));
        let consuming = tokio::time::timeout(wait, inner.consumer_conn.lock())
            .await
            .is_ok_and(|g| g.as_ref().is_some_and(|c| c.status().connected()));
        [("publish", publishing), ("consume", consuming)]
            .into_iter()
            .filter(|(_, live)| *live)
            .filter_map(|(role, _)| Some((role, inner.nodes.of(role)?.to_owned())))
            .collect()
    }

    async fn teardown(&self) -> Result<(), BrokerError> {
        tokio::time::timeout(OP_TIMEOUT * 3, self.teardown_unbounded())
            .await
            .map_err(|_| BrokerError::Connection("teardown: no answer in time".into()))?
    }

    async fn close(&self) {
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::Release);
        if let Some((conn, _)) = self.inner.publisher.lock().await.take() {
            let _ = tokio::time::timeout(OP_TIMEOUT, conn.close(200, "shutdown".into())).await;
        }
        if let Some(conn) = self.inner.consumer_conn.lock().await.take() {
            let _ = tokio::time::timeout(OP_TIMEOUT, conn.close(200, "shutdown".into())).await;
        }
    }
}

/// Binds a server-named exclusive queue to the events exchange and starts consuming it.
async fn bind_events(inner: &Inner) -> Result<(Channel, lapin::Consumer), BrokerError> {
    inner
        .consumer_channel("binding the events queue", |ch| bind_events_on(inner, ch))
        .await
}

async fn bind_events_on(
    inner: &Inner,
    ch: Channel,
) -> Result<(Channel, lapin::Consumer), BrokerError> {
    let q = ch
        .queue_declare(
            "".into(),
            QueueDeclareOptions {
                exclusive: true,
                auto_delete: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .map_err(err)?;
    ch.queue_bind(
        q.name().clone(),
        inner.topology.events_exchange().as_str().into(),
        "".into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await
    .map_err(err)?;
    let consumer = ch
        .basic_consume(
            q.name().clone(),
            "".into(),
            BasicConsumeOptions {
                no_ack: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .map_err(err)?;
    Ok((ch, consumer))
}

/// Forwards events until the receiver goes away (Ok) or the channel fails (Err).
async fn forward_events(
    (ch, mut consumer): (Channel, lapin::Consumer),
    tx: &tokio::sync::mpsc::Sender<Vec<u8>>,
) -> Result<(), BrokerError> {
    while let Some(d) = consumer.next().await {
        let d = d.map_err(err)?;
        if tx.send(d.data).await.is_err() {
            let _ = ch.close(200, "listener gone".into()).await;
            return Ok(());
        }
    }
    Err(BrokerError::Connection("event consumer ended".into()))
}

struct RabbitSubscription {
    inner: Arc<Inner>,
    spec: &'static QueueSpec,
    queue: Arc<ResolvedQueue>,
    live: Option<(Channel, lapin::Consumer, AckWindow)>,
    /// The consumer a prefetch change replaced: cancelled, read to its end (its
    /// deliveries already sent are valid on the same channel) before the new one.
    draining: Option<lapin::Consumer>,
    backoff: Duration,
    cancelled: bool,
}

impl RabbitSubscription {
    /// A consumer of the queue on `ch` with the current prefetch (RabbitMQ applies a
    /// per-consumer prefetch to consumers started after it is set).
    async fn consume(&self, ch: &Channel) -> Result<lapin::Consumer, BrokerError> {
        ch.basic_qos(self.queue.prefetch, BasicQosOptions::default())
            .await
            .map_err(err)?;
        let tag: ShortString =
            format!("conveyor-{}-{}", self.spec.key, uuid::Uuid::new_v4()).into();
        ch.basic_consume(
            self.queue.name.as_str().into(),
            tag,
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .map_err(err)
    }

    async fn open(&mut self) -> Result<(), BrokerError> {
        let this = &*self;
        let (ch, consumer) = this
            .inner
            .consumer_channel("starting a consumer", |ch| async move {
                let consumer = this.consume(&ch).await?;
                Ok((ch, consumer))
            })
            .await?;
        let window = AckWindow::start(ch.clone());
        self.live = Some((ch, consumer, window));
        self.backoff = Duration::from_millis(self.inner.settings.reconnect_min_ms);
        Ok(())
    }
}

#[async_trait]
impl Subscription for RabbitSubscription {
    async fn next(&mut self) -> Option<Delivery> {
        loop {
            if self.cancelled {
                return None;
            }
            if let (Some(old), Some((_, _, window))) = (self.draining.as_mut(), self.live.as_ref())
            {
                if let Some(Ok(d)) = old.next().await {
                    return Some(delivery(&self.inner, self.spec, &self.queue, window, d));
                }
                // Ended (its cancel confirmed) or its channel is gone: the new one serves.
                self.draining = None;
                continue;
            }
            self.draining = None;
            let Some((_, consumer, window)) = self.live.as_mut() else {
                if let Err(e) = self.open().await {
                    tracing::warn!(queue = %self.queue.name, error = %e, backoff = ?self.backoff, "consumer reconnect failed");
                    tokio::time::sleep(self.backoff).await;
                    self.backoff = (self.backoff * 2)
                        .min(Duration::from_millis(self.inner.settings.reconnect_max_ms));
                } else {
                    tracing::info!(queue = %self.queue.name, "consuming");
                }
                continue;
            };
            match consumer.next().await {
                Some(Ok(d)) => {
                    return Some(delivery(&self.inner, self.spec, &self.queue, window, d));
                }
                Some(Err(e)) => {
                    tracing::warn!(queue = %self.queue.name, error = %e, "consumer lost its channel; reconnecting");
                    self.live = None;
                }
                None => {
                    // A stream that ends without our cancel is a lost consumer (lapin#389).
                    tracing::warn!(queue = %self.queue.name, "consumer stream ended; reconnecting");
                    self.live = None;
                }
            }
        }
    }

    async fn cancel(&mut self) {
        self.cancelled = true;
        if let Some((ch, consumer, _)) = self.live.as_ref() {
            let _ = tokio::time::timeout(
                OP_TIMEOUT,
                ch.basic_cancel(consumer.tag(), BasicCancelOptions::default()),
            )
            .await;
        }
        // The channel stays open so in-flight deliveries can still be acked; it closes
        // with the connection, which hands back whatever is still unacked.
    }

    async fn set_prefetch(&mut self, prefetch: u16) -> Result<(), BrokerError> {
        // A reconnect opens with the new prefetch.
        let mut resolved = (*self.queue).clone();
        resolved.prefetch = prefetch;
        self.queue = Arc::new(resolved);
        let Some(ch) = self.live.as_ref().map(|(ch, _, _)| ch.clone()) else {
            return Ok(());
        };
        // Start a consumer with the new limit on the same channel, then cancel the old
        // one (no gap in between; its deliveries keep their acks on this channel).
        let fresh = bounded("changing the prefetch", self.consume(&ch)).await?;
        let Some((_, consumer, _)) = self.live.as_mut() else {
            return Ok(());
        };
        let old = std::mem::replace(consumer, fresh);
        let _ = tokio::time::timeout(
            OP_TIMEOUT,
            ch.basic_cancel(old.tag(), BasicCancelOptions::default()),
        )
        .await;
        self.draining = Some(old);
        Ok(())
    }
}

/// A delivery of `queue`'s consumer, settled through its channel's window.
fn delivery(
    inner: &Arc<Inner>,
    spec: &'static QueueSpec,
    queue: &Arc<ResolvedQueue>,
    window: &AckWindow,
    d: lapin::message::Delivery,
) -> Delivery {
    window.delivered(d.delivery_tag);
    let settle = RabbitSettle {
        window: window.clone(),
        tag: d.delivery_tag,
        inner: inner.clone(),
        queue: queue.clone(),
    };
    Delivery::new(spec, d.data, d.redelivered, Box::new(settle))
}

/// Settles through the channel's [`AckWindow`], which coalesces acks into `multiple` ones.
struct RabbitSettle {
    window: AckWindow,
    tag: u64,
    inner: Arc<Inner>,
    queue: Arc<ResolvedQueue>,
}

impl RabbitSettle {
    async fn ack_now(&self) -> Result<(), BrokerError> {
        self.window
            .ack(self.tag)
            .await
            .map_err(BrokerError::Connection)
    }
}

#[async_trait]
impl Settle for RabbitSettle {
    async fn ack(self: Box<Self>) -> Result<(), BrokerError> {
        self.ack_now().await
    }

    async fn retry(self: Box<Self>, tier: usize, body: Vec<u8>) -> Result<(), BrokerError> {
        let Some((_, name)) = self.queue.retry.get(tier).or(self.queue.retry.last()) else {
            return Err(BrokerError::Protocol("queue has no retry tiers".into()));
        };
        let message_id = String::new();
        self.inner
            .publish_all(vec![Publish {
                mandatory: true,
                exchange: self.inner.topology.delay_exchange(),
                routing_key: name.clone(),
                message_id,
                body,
                headers: None,
            }])
            .await?;
        self.ack_now().await
    }

    async fn dead_letter(
        self: Box<Self>,
        body: Vec<u8>,
        info: &DeadLetterInfo,
    ) -> Result<(), BrokerError> {
        let mut headers = FieldTable::default();
        headers.insert("x-conveyor-reason".into(), long_str(info.reason.as_str()));
        headers.insert(
            "x-conveyor-origin-queue".into(),
            long_str(&info.origin_queue),
        );
        headers.insert(
            "x-conveyor-attempts".into(),
            AMQPValue::LongLongInt(i64::from(info.attempts)),
        );
        headers.insert("x-conveyor-last-error".into(), long_str(&info.last_error));
        self.inner
            .publish_all(vec![Publish {
                mandatory: true,
                exchange: self.inner.topology.dead_letter_exchange(),
                routing_key: self.queue.dlq.clone(),
                message_id: String::new(),
                body,
                headers: Some(headers),
            }])
            .await?;
        self.ack_now().await
    }

    fn requeue(self: Box<Self>) {
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = self.window.nack(self.tag).await;
            });
        }
    }
}
