//! Settling a delivery: ack, retry (published to its tier, then acked), dead-letter
//! (published with its reason, then acked), requeue; and the dead copies read back.

use std::sync::Arc;

use async_trait::async_trait;
use lapin::types::{AMQPValue, FieldTable};

use super::Inner;
use super::publish::Publish;
use super::publish::long_str;
use crate::broker::ack_window::AckWindow;
use crate::broker::topology::ResolvedQueue;
use crate::broker::{BrokerError, DeadLetterInfo, Settle};

/// Settles through the channel's [`AckWindow`], which coalesces acks into `multiple` ones.
pub(super) struct RabbitSettle {
    pub(super) window: AckWindow,
    pub(super) tag: u64,
    pub(super) inner: Arc<Inner>,
    pub(super) queue: Arc<ResolvedQueue>,
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

/// A DLQ message's death, read from its headers.
pub(super) fn dead_copy(body: Vec<u8>, headers: Option<&FieldTable>) -> crate::broker::DeadCopy {
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
    crate::broker::DeadCopy {
        body,
        conveyor_reason: get("x-conveyor-reason"),
        broker_reason: field("reason"),
        broker_queue: field("queue"),
        broker_count: count,
    }
}
