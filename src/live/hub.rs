//! One listener per API instance, fanning live events out to its connections: the bus's
//! [`EVENTS`] topic, decoded only while a connection of this instance watches, each event
//! framed once for all of them.

use std::sync::Arc;

use tokio::sync::broadcast;

use super::event::{Body, EVENTS, Shared};
use crate::bus::Bus;

#[derive(Clone)]
pub struct Hub {
    tx: broadcast::Sender<Arc<Shared>>,
    bus: Bus,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("receivers", &self.tx.receiver_count())
            .finish()
    }
}

impl Hub {
    /// Takes this instance's live events from `bus`.
    pub fn start(bus: &Bus) -> Self {
        let (tx, _) = broadcast::channel(EVENTS.backlog);
        let events = tx.clone();
        bus.on(&EVENTS, move |body| {
            // Nobody watching on this instance: skip decoding and framing.
            if events.receiver_count() == 0 {
                return;
            }
            match serde_json::from_slice::<Body>(body) {
                Ok(Body::One(event)) => send(&events, event),
                Ok(Body::Many(batch)) => batch.into_iter().for_each(|e| send(&events, e)),
                Err(e) => tracing::debug!(error = %e, "ignored a message that is not a live event"),
            }
        });
        Hub {
            tx,
            bus: bus.clone(),
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Shared>> {
        self.tx.subscribe()
    }

    /// The bus the hub listens on (streams also watch key notices on it).
    pub fn bus(&self) -> &Bus {
        &self.bus
    }
}

fn send(tx: &broadcast::Sender<Arc<Shared>>, event: super::Event) {
    // No receiver is fine: nobody is watching.
    let _ = tx.send(Shared::new(event));
}
