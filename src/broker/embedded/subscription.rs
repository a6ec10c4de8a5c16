//! A queue's consumer: deliveries up to its prefetch, the permits resized at run time.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Semaphore;

use super::Inner;
use super::QueueState;
use super::now_ms;
use super::settle::EmbeddedSettle;
use crate::broker::{BrokerError, Delivery, QueueSpec, Subscription};

pub(super) struct EmbeddedSubscription {
    pub(super) inner: Arc<Inner>,
    pub(super) spec: &'static QueueSpec,
    pub(super) state: Arc<QueueState>,
    pub(super) permits: Arc<Semaphore>,
    pub(super) prefetch: u16,
    pub(super) cancelled: bool,
}

#[async_trait]
impl Subscription for EmbeddedSubscription {
    async fn next(&mut self) -> Option<Delivery> {
        if self.cancelled {
            return None;
        }
        // Prefetch: at most `prefetch` deliveries of this subscription unsettled at once.
        let permit = self.permits.clone().acquire_owned().await.ok()?;
        loop {
            let notified = self.state.notify.notified();
            let next_due = {
                let mut st = self.state.state.lock().ok()?;
                let next_due = st.promote(now_ms());
                if let Some(msg) = st.ready.pop_front() {
                    let settle = EmbeddedSettle {
                        inner: self.inner.clone(),
                        state: self.state.clone(),
                        spec: self.spec,
                        id: msg.id,
                        body: Some(msg.body.clone()),
                        _permit: permit,
                    };
                    // Another consumer may be waiting for what is left.
                    if !st.ready.is_empty() {
                        self.state.notify.notify_one();
                    }
                    return Some(Delivery::new(
                        self.spec,
                        msg.body,
                        msg.redelivered,
                        Box::new(settle),
                    ));
                }
                next_due
            };
            match next_due {
                Some(due) => {
                    let wait = Duration::from_millis((due - now_ms()).max(1) as u64);
                    let _ = tokio::time::timeout(wait, notified).await;
                }
                None => notified.await,
            }
        }
    }

    async fn cancel(&mut self) {
        self.cancelled = true;
        self.permits.close();
    }

    async fn set_prefetch(&mut self, prefetch: u16) -> Result<(), BrokerError> {
        crate::broker::resize_permits(
            &self.permits,
            usize::from(self.prefetch),
            usize::from(prefetch),
        );
        self.prefetch = prefetch;
        Ok(())
    }
}
