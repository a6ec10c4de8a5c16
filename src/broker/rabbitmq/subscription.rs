//! A queue's consumer: deliveries with their settle handles, re-subscribed after a
//! connection loss, prefetch changed at run time.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt as _;
use lapin::Channel;
use lapin::options::{BasicCancelOptions, BasicConsumeOptions, BasicQosOptions};
use lapin::types::{FieldTable, ShortString};

use super::Inner;
use super::OP_TIMEOUT;
use super::bounded;
use super::err;
use super::settle::RabbitSettle;
use crate::broker::ack_window::AckWindow;
use crate::broker::topology::ResolvedQueue;
use crate::broker::{BrokerError, Delivery, QueueSpec, Subscription};

pub(super) struct RabbitSubscription {
    pub(super) inner: Arc<Inner>,
    pub(super) spec: &'static QueueSpec,
    pub(super) queue: Arc<ResolvedQueue>,
    pub(super) live: Option<(Channel, lapin::Consumer, AckWindow)>,
    /// The consumer a prefetch change replaced: cancelled, read to its end (its
    /// deliveries already sent are valid on the same channel) before the new one.
    pub(super) draining: Option<lapin::Consumer>,
    pub(super) backoff: Duration,
    pub(super) cancelled: bool,
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

    pub(super) async fn open(&mut self) -> Result<(), BrokerError> {
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
    let traceparent = super::publish::traceparent_of(d.properties.headers().as_ref());
    Delivery::new(spec, d.data, d.redelivered, Box::new(settle)).with_traceparent(traceparent)
}
