//! RabbitMQ backend (lapin 4). Separate connections for publishing and consuming, both
//! re-established with backoff; persistent messages with `mandatory` and publisher
//! confirms awaited as a window, never one by one; manual acks; retries and dead letters
//! are published (confirmed) before the original delivery is acked.

mod connection;
mod declarations;
mod events;
mod publish;
mod settle;
mod subscription;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lapin::options::{BasicAckOptions, BasicNackOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Connection};
use tokio::sync::Mutex;

use super::nodes::Nodes;
use super::topology::Topology;
use super::{Broker, BrokerError, Outgoing, QueueSpec, Subscription};
use crate::broker::settings::BrokerSettings;
use declarations::declare;
use events::bind_events;
use events::forward_events;
use publish::Publish;
use settle::dead_copy;
use subscription::RabbitSubscription;

/// Bound on broker round trips that have no deadline of their own (declare, cancel,
/// close): a wedged channel must not hang shutdown (lapin#409).
pub(super) const OP_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) async fn bounded<T>(
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
pub(super) const QUORUM_DELIVERY_LIMIT: i32 = 20;

pub struct RabbitBroker {
    inner: Arc<Inner>,
}

pub(super) struct Inner {
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

pub(super) fn err(e: lapin::Error) -> BrokerError {
    if e.is_io_error() || !e.is_amqp_soft_error() {
        BrokerError::Connection(e.to_string())
    } else {
        BrokerError::Protocol(e.to_string())
    }
}

impl RabbitBroker {
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
                    headers: m.traceparent.as_deref().map(publish::trace_headers),
                }
            })
            .collect();
        self.inner.publish_all(items).await
    }

    async fn publish_events(&self, topic: &str, bodies: Vec<Vec<u8>>) -> Result<(), BrokerError> {
        if bodies.is_empty() {
            return Ok(());
        }
        let exchange = self.inner.topology.events_exchange();
        let items = bodies
            .into_iter()
            .map(|body| Publish {
                mandatory: false,
                exchange: exchange.clone(),
                // A fanout exchange ignores the key for routing and hands it over.
                routing_key: topic.to_owned(),
                message_id: String::new(),
                body,
                headers: None,
            })
            .collect();
        self.inner.publish_all(items).await
    }

    async fn subscribe_events(
        &self,
    ) -> Result<tokio::sync::mpsc::Receiver<crate::broker::FanOut>, BrokerError> {
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

    async fn subscribe_at(
        &self,
        queue: &'static QueueSpec,
        prefetch: u16,
    ) -> Result<Box<dyn Subscription>, BrokerError> {
        let mut resolved = self.inner.topology.queue(queue).clone();
        resolved.prefetch = prefetch;
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
