//! One listener per API instance, fanning task events out to its connections.

use std::sync::Arc;

use tokio::sync::broadcast;

use crate::broker::Broker;
use crate::domains::ai_tasks::messages::TaskEvent;

/// Events waiting for the slowest connection of this instance; beyond it, a
/// connection is told it lagged and re-reads the store.
const BACKLOG: usize = 4096;

/// An event with its WebSocket frame, serialized once for every connection.
#[derive(Debug)]
pub struct Shared {
    pub event: TaskEvent,
    pub frame: axum::extract::ws::Utf8Bytes,
}

impl Shared {
    pub fn new(event: TaskEvent) -> Arc<Self> {
        let frame = super::ws::event_json(&event).to_string().into();
        Arc::new(Shared { event, frame })
    }
}

#[derive(Clone)]
pub struct Hub {
    tx: broadcast::Sender<Arc<Shared>>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("receivers", &self.tx.receiver_count())
            .finish()
    }
}

impl Hub {
    /// Starts listening to the broker's event fan-out; returns once listening, so no
    /// event published after the server starts serving can miss this instance.
    pub async fn start(broker: Arc<dyn Broker>) -> Result<Self, crate::broker::BrokerError> {
        let (tx, _) = broadcast::channel(BACKLOG);
        let hub = Hub { tx: tx.clone() };
        let mut rx = broker.subscribe_events().await?;
        tokio::spawn(async move {
            while let Some(body) = rx.recv().await {
                // Nobody watching on this instance: skip decoding and framing.
                if tx.receiver_count() == 0 {
                    continue;
                }
                match serde_json::from_slice::<EventBody>(&body) {
                    Ok(EventBody::One(event)) => send(&tx, event),
                    Ok(EventBody::Many(events)) => events.into_iter().for_each(|e| send(&tx, e)),
                    Err(e) => {
                        tracing::debug!(error = %e, "ignored an event that is not a task event")
                    }
                }
            }
        });
        Ok(hub)
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Shared>> {
        self.tx.subscribe()
    }
}

/// An events message: one event, or a batch (a submission batch's "accepted" events
/// travel as one message).
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum EventBody {
    Many(Vec<TaskEvent>),
    One(TaskEvent),
}

fn send(tx: &broadcast::Sender<Arc<Shared>>, event: TaskEvent) {
    // No receiver is fine: nobody is watching.
    let _ = tx.send(Shared::new(event));
}
