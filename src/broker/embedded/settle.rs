//! Settling a delivery: ack, retry to a tier, dead-letter with its reason, requeue,
//! each recorded in the file before it counts.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::{OwnedSemaphorePermit, oneshot};

use super::Inner;
use super::Message;
use super::Op;
use super::QueueState;
use super::now_ms;
use crate::broker::{BrokerError, DeadLetterInfo, QueueSpec, Settle};

pub(super) struct EmbeddedSettle {
    pub(super) inner: Arc<Inner>,
    pub(super) state: Arc<QueueState>,
    pub(super) spec: &'static QueueSpec,
    pub(super) id: i64,
    /// Kept to hand the message back on requeue.
    pub(super) body: Option<Vec<u8>>,
    pub(super) _permit: OwnedSemaphorePermit,
}

impl EmbeddedSettle {
    async fn move_to(
        &self,
        queue: String,
        body: Vec<u8>,
        ready_at: i64,
        headers: Option<String>,
    ) -> Result<(), BrokerError> {
        let (done, confirmed) = oneshot::channel();
        self.inner
            .writer
            .send(Op::Move {
                id: self.id,
                queue,
                body,
                ready_at,
                headers,
                done,
            })
            .map_err(|_| BrokerError::Store("writer stopped".into()))?;
        confirmed
            .await
            .map_err(|_| BrokerError::Store("writer stopped".into()))?
            .map_err(BrokerError::Store)
    }
}

#[async_trait]
impl Settle for EmbeddedSettle {
    async fn ack(self: Box<Self>) -> Result<(), BrokerError> {
        // Not awaited: a lost delete means one redelivery after a crash, which the
        // consumer's dedupe fence absorbs.
        self.inner
            .writer
            .send(Op::Delete(self.id))
            .map_err(|_| BrokerError::Store("writer stopped".into()))
    }

    async fn retry(self: Box<Self>, tier: usize, body: Vec<u8>) -> Result<(), BrokerError> {
        let q = self.inner.topology.queue(self.spec);
        let delay = q
            .retry
            .get(tier)
            .or(q.retry.last())
            .map(|(d, _)| *d)
            .unwrap_or_default();
        let ready_at = now_ms() + delay.as_millis() as i64;
        self.move_to(q.name.clone(), body.clone(), ready_at, None)
            .await?;
        let msg = Message {
            id: self.id,
            body,
            redelivered: false,
        };
        self.inner.enqueue(&self.state, msg, ready_at);
        Ok(())
    }

    async fn dead_letter(
        self: Box<Self>,
        body: Vec<u8>,
        info: &DeadLetterInfo,
    ) -> Result<(), BrokerError> {
        let q = self.inner.topology.queue(self.spec);
        let headers = serde_json::json!({
            "reason": info.reason.as_str(),
            "origin_queue": info.origin_queue,
            "attempts": info.attempts,
            "last_error": info.last_error,
        })
        .to_string();
        self.move_to(q.dlq.clone(), body, now_ms(), Some(headers))
            .await
    }

    fn requeue(mut self: Box<Self>) {
        if let (Some(body), Ok(mut st)) = (self.body.take(), self.state.state.lock()) {
            st.ready.push_front(Message {
                id: self.id,
                body,
                redelivered: true,
            });
        }
        self.state.notify.notify_one();
    }
}
