//! Intake's order publisher: requests hand their order message to one task that
//! publishes whatever has gathered as one confirmed batch (one channel acquisition and one
//! wait for all the confirms), so many confirms are in flight while each request waits
//! only for its own batch. Up to [`IN_FLIGHT`] batches wait for their confirms at once: a
//! request arriving while one batch waits goes out with the next at once, not after that
//! wait (with one batch at a time it waited a confirm and a half on average). A failed
//! batch fails every request in it; each gives its unit back, and an order whose message
//! got through anyway is refused by the consumer (its unit is marked returned), so
//! nothing is ever sold twice.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::broker::{Broker, Outgoing};

/// Messages one batch takes at most.
const BATCH: usize = 256;

/// Batches waiting for their confirms at once; the next waits for a free slot, gathering
/// what arrives meanwhile.
const IN_FLIGHT: usize = 4;

type Request = (Outgoing, oneshot::Sender<Result<(), String>>);

#[derive(Clone)]
pub struct Publisher {
    tx: mpsc::Sender<Request>,
}

impl Publisher {
    pub fn start(broker: Arc<dyn Broker>, timeout: Duration) -> Self {
        let (tx, mut rx) = mpsc::channel::<Request>(BATCH * 4);
        tokio::spawn(async move {
            let slots = Arc::new(Semaphore::new(IN_FLIGHT));
            let mut batch: Vec<Request> = Vec::with_capacity(BATCH);
            loop {
                // A free slot first: what arrives while all are taken joins the next batch.
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    return;
                };
                if rx.recv_many(&mut batch, BATCH).await == 0 {
                    return;
                }
                let (messages, waiters): (Vec<_>, Vec<_>) = batch.drain(..).unzip();
                let broker = broker.clone();
                tokio::spawn(async move {
                    let result = match tokio::time::timeout(
                        timeout,
                        broker.publish_batch(&messages),
                    )
                    .await
                    {
                        Ok(Ok(())) => Ok(()),
                        Ok(Err(e)) => Err(e.to_string()),
                        Err(_) => Err(format!("no confirm within {timeout:?}")),
                    };
                    for w in waiters {
                        let _ = w.send(result.clone());
                    }
                    drop(slot);
                });
            }
        });
        Publisher { tx }
    }

    /// Publishes one message with the next batch; Ok once the broker confirmed it.
    pub async fn publish(&self, message: Outgoing) -> Result<(), String> {
        let (done, wait) = oneshot::channel();
        self.tx
            .send((message, done))
            .await
            .map_err(|_| "the publisher stopped".to_owned())?;
        wait.await.map_err(|_| "the publisher stopped".to_owned())?
    }
}
