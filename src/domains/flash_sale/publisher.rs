//! Intake's order publisher: requests hand their order to one task that packs whatever
//! has gathered into messages of up to `orders_per_message` orders and publishes them as
//! one confirmed batch (one channel acquisition and one wait for all the confirms), so
//! each request waits only for its own batch. RabbitMQ's cost is per persistent message
//! (about 85 µs of its CPU each on this project's bench machine), so orders that meet
//! share one. One batch waits for its confirms at a time; what arrives meanwhile goes
//! out with the next. A failed batch fails every request in it; each gives its unit
//! back, and an order whose message got through anyway is refused by the consumer (its
//! unit is marked returned), so nothing is ever sold twice.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::messages::{CreateOrder, orders_message};
use super::queues::ORDERS_CREATE;
use crate::broker::{Broker, Outgoing, Target};

/// Orders one batch takes at most.
const BATCH: usize = 256;

/// An order waiting to go out: the trace of the request that took its unit, and who
/// waits for its confirm.
struct Waiting {
    order: CreateOrder,
    trace: Option<String>,
    done: oneshot::Sender<Result<(), String>>,
}

#[derive(Clone)]
pub struct Publisher {
    tx: mpsc::Sender<Waiting>,
    timeout: Duration,
}

impl Publisher {
    /// `per_message` (≥ 1) bounds the orders one message carries.
    pub fn start(broker: Arc<dyn Broker>, timeout: Duration, per_message: usize) -> Self {
        let per_message = per_message.max(1);
        let (tx, mut rx) = mpsc::channel::<Waiting>(BATCH * 4);
        // One batch at a time: the fewer messages, the less RabbitMQ works and the sooner
        // it confirms. Intake @50 clients, `cargo bench --bench flash_sale -- 6000`
        // (2026-12-07): four batches in flight 0.26× the floor's rate (p50 4.4 ms, 4–5
        // orders per message), two 0.30× (4.5 ms), one 0.33–0.34× (3.2–4.1 ms).
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(BATCH);
            while rx.recv_many(&mut batch, BATCH).await > 0 {
                let result = publish(broker.as_ref(), &batch, per_message, timeout).await;
                for w in batch.drain(..) {
                    let _ = w.done.send(result.clone());
                }
            }
        });
        Publisher { tx, timeout }
    }

    /// Publishes `order` with the next batch; Ok once the broker confirmed its message.
    /// The timeout bounds the whole wait, the batch before this one's included (an order
    /// published after its request gave up finds its unit given back and is refused).
    pub async fn publish(&self, order: CreateOrder) -> Result<(), String> {
        let (done, wait) = oneshot::channel();
        let trace = crate::traces::current();
        let queued = async {
            self.tx
                .send(Waiting { order, trace, done })
                .await
                .map_err(|_| "the publisher stopped".to_owned())?;
            wait.await.map_err(|_| "the publisher stopped".to_owned())?
        };
        tokio::time::timeout(self.timeout, queued)
            .await
            .map_err(|_| format!("no confirm within {:?}", self.timeout))?
    }
}

/// Packs `batch` into messages of up to `per_message` orders (each in the trace of its
/// first order's request) and publishes them with one wait for every confirm, bounded
/// by `timeout` so a stuck broker does not hold the next batch.
async fn publish(
    broker: &dyn Broker,
    batch: &[Waiting],
    per_message: usize,
    timeout: Duration,
) -> Result<(), String> {
    let messages = batch
        .chunks(per_message)
        .map(|chunk| {
            let orders = chunk.iter().map(|w| w.order.clone()).collect();
            let message = orders_message(orders).in_trace(chunk[0].trace.as_deref());
            Outgoing::new(
                Target::Queue(&ORDERS_CREATE),
                &message,
                broker.max_payload(),
            )
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    match tokio::time::timeout(timeout, broker.publish_batch(&messages)).await {
        Ok(Ok(())) => {
            metrics::counter!("conveyor_flash_sale_order_messages_total")
                .increment(messages.len() as u64);
            Ok(())
        }
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no confirm within {timeout:?}")),
    }
}
