//! Intake's order publisher: requests hand their order message to one task that
//! publishes whatever has gathered as one confirmed batch (one channel acquisition and one
//! wait for all the confirms), so many confirms are in flight while each request waits
//! only for its own batch. A failed batch fails every request in it; each gives its unit
//! back, and an order whose message got through anyway is refused by the consumer (its
//! unit is marked returned), so nothing is ever sold twice.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::broker::{Broker, Outgoing};

/// Messages one batch takes at most.
const BATCH: usize = 256;

type Request = (Outgoing, oneshot::Sender<Result<(), String>>);

#[derive(Clone)]
pub struct Publisher {
    tx: mpsc::Sender<Request>,
}

impl Publisher {
    pub fn start(broker: Arc<dyn Broker>, timeout: Duration) -> Self {
        let (tx, mut rx) = mpsc::channel::<Request>(BATCH * 4);
        tokio::spawn(async move {
            let mut batch: Vec<Request> = Vec::with_capacity(BATCH);
            while rx.recv_many(&mut batch, BATCH).await > 0 {
                let (messages, waiters): (Vec<_>, Vec<_>) = batch.drain(..).unzip();
                let result =
                    match tokio::time::timeout(timeout, broker.publish_batch(&messages)).await {
                        Ok(Ok(())) => Ok(()),
                        Ok(Err(e)) => Err(e.to_string()),
                        Err(_) => Err(format!("no confirm within {timeout:?}")),
                    };
                for w in waiters {
                    let _ = w.send(result.clone());
                }
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
