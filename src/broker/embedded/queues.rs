//! The in-memory queues: routing a target to its queue, ids, enqueueing with a
//! ready-at time (retry tiers and delays wait in the same queue).

use std::sync::Arc;

use super::Inner;
use super::Message;
use super::QueueState;
use super::now_ms;
use super::store_err;
use crate::broker::BrokerError;
use crate::broker::topology::Target;

impl Inner {
    pub(super) fn queue_state(&self, name: &str) -> Option<Arc<QueueState>> {
        self.queues.lock().ok()?.get(name).cloned()
    }

    pub(super) fn next_id(&self) -> Result<i64, BrokerError> {
        let mut id = self.next_id.lock().map_err(store_err)?;
        *id += 1;
        Ok(*id)
    }

    /// Work queue and due time for a publish target.
    pub(super) fn route(&self, target: Target) -> (String, i64) {
        match target {
            Target::Queue(q) => (self.topology.queue(q).name.clone(), 0),
            Target::Delay(d) => (
                self.topology.queue(d.target).name.clone(),
                now_ms() + self.topology.delay(d).delay.as_millis() as i64,
            ),
        }
    }

    pub(super) fn enqueue(&self, q: &QueueState, msg: Message, ready_at: i64) {
        if let Ok(mut st) = q.state.lock() {
            if ready_at <= now_ms() {
                st.ready.push_back(msg);
            } else {
                st.delayed.insert((ready_at, msg.id), msg);
            }
        }
        q.notify.notify_one();
    }
}
