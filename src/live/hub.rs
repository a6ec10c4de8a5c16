//! One listener per API instance, fanning live events out to its connections.

use std::sync::Arc;

use tokio::sync::broadcast;

use super::control::{Control, PREFIX, REPORT_PREFIX, ReportWire, Wire};
use super::event::{Body, Shared};
use crate::broker::Broker;
use crate::telemetry::report::ProcessReport;

/// Events waiting for the slowest connection of this instance; beyond it, a
/// connection is told it lagged and re-reads the store.
const BACKLOG: usize = 4096;

#[derive(Clone)]
pub struct Hub {
    tx: broadcast::Sender<Arc<Shared>>,
    controls: broadcast::Sender<Arc<Control>>,
    reports: broadcast::Sender<Arc<ProcessReport>>,
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
        let (controls, _) = broadcast::channel(64);
        let (reports, _) = broadcast::channel(256);
        let hub = Hub {
            tx: tx.clone(),
            controls: controls.clone(),
            reports: reports.clone(),
        };
        let mut rx = broker.subscribe_events().await?;
        tokio::spawn(async move {
            while let Some(body) = rx.recv().await {
                if body.starts_with(REPORT_PREFIX) {
                    match serde_json::from_slice::<ReportWire>(&body) {
                        // Nobody listening (a hub without a board) is fine.
                        Ok(w) => drop(reports.send(Arc::new(w.report))),
                        Err(e) => tracing::warn!(error = %e, "ignored an unknown report"),
                    }
                    continue;
                }
                if body.starts_with(PREFIX) {
                    match serde_json::from_slice::<Wire>(&body) {
                        Ok(w) => {
                            let _ = controls.send(Arc::new(w.control));
                        }
                        Err(e) => tracing::warn!(error = %e, "ignored an unknown control notice"),
                    }
                    continue;
                }
                // Nobody watching on this instance: skip decoding and framing.
                if tx.receiver_count() == 0 {
                    continue;
                }
                match serde_json::from_slice::<Body>(&body) {
                    Ok(Body::One(event)) => send(&tx, event),
                    Ok(Body::Many(events)) => events.into_iter().for_each(|e| send(&tx, e)),
                    Err(e) => {
                        tracing::debug!(error = %e, "ignored a message that is not a live event")
                    }
                }
            }
        });
        Ok(hub)
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Shared>> {
        self.tx.subscribe()
    }

    /// The worker processes' reports, for the ops board.
    pub fn reports(&self) -> broadcast::Receiver<Arc<ProcessReport>> {
        self.reports.subscribe()
    }

    /// Control notices (see [`Control`]), from every instance.
    pub fn controls(&self) -> broadcast::Receiver<Arc<Control>> {
        self.controls.subscribe()
    }
}

fn send(tx: &broadcast::Sender<Arc<Shared>>, event: super::Event) {
    // No receiver is fine: nobody is watching.
    let _ = tx.send(Shared::new(event));
}
