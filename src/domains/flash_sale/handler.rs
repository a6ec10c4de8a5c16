//! The consumers: write accepted orders (`orders.create`, in batches), cancel unpaid ones
//! when their timer fires (`orders.expire`).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::messages::{
    CreateOrder, EXPIRE_ORDER, ExpireOrder, OrderEvent, orders_of, publish_events,
};
use super::notify::Notices;
use super::queues::{ORDER_PAYMENT_TIMEOUT, ORDERS_CREATE};
use super::service::Sales;
use super::store::WriteError;
use super::write::{self, NewOrder};
use crate::broker::{Envelope, Outgoing, Target};
use crate::consumer::{BatchHandler, Context, Fate, Handler, HandlerError};
use crate::outbox::{self, Relay};

fn payload<T: serde::de::DeserializeOwned>(message: &Envelope) -> Result<T, HandlerError> {
    serde_json::from_value(message.payload.clone())
        .map_err(|e| HandlerError::permanent(format!("invalid payload: {e}")))
}

/// Writes the orders units were taken for, with their payment timers (through the
/// outbox, in the same transaction), a batch of deliveries at a time: one transaction
/// for the orders of the batch ([`super::write`]); if anything in it is refused, the
/// batch goes unanswered and the consumer runtime runs each message again alone, in a
/// transaction of its own, with its own answer. A message of several orders
/// ([`super::messages::CreateOrders`]) refused alone sends each of its orders back to
/// the queue as a message of its own, so a refusal still isolates only its order. A
/// permanent failure gives the unit and the buyer's slot back (once per order) before
/// the message is dead-lettered.
pub struct CreateOrderHandler {
    pub sales: Arc<Sales>,
    pub relay: Relay,
    pub max_payload: usize,
}

/// The payment timer of an order, through the outbox.
fn timer_of(order_id: &str) -> (Target, Envelope) {
    let timer = Envelope::new(
        EXPIRE_ORDER,
        json!(ExpireOrder {
            order_id: order_id.to_owned()
        }),
    )
    .with_correlation_id(order_id.to_owned());
    (Target::Delay(&ORDER_PAYMENT_TIMEOUT), timer)
}

impl CreateOrderHandler {
    fn pay_within(&self) -> Result<chrono::Duration, HandlerError> {
        chrono::Duration::from_std(self.sales.pay_within).map_err(HandlerError::permanent)
    }

    /// Whether the order's unit was given back already: a dead letter replayed after
    /// that must not write an order that holds no unit.
    async fn given_back(&self, m: &CreateOrder) -> Result<(), HandlerError> {
        if self
            .sales
            .stock
            .is_returned(&m.sale_id, &m.order_id)
            .await
            .map_err(HandlerError::transient)?
        {
            return Err(HandlerError::permanent(
                "the order's unit was given back already; the buyer must order again",
            ));
        }
        Ok(())
    }

    /// Writes `orders` in one transaction (none when anything is refused): their events.
    /// A refusal is permanent, a database failure transient.
    async fn write(
        &self,
        ctx: &Context,
        orders: &[&CreateOrder],
    ) -> Result<Vec<OrderEvent>, HandlerError> {
        if orders.is_empty() {
            return Ok(Vec::new());
        }
        let pay_within = self.pay_within()?;
        let txn = crate::db::begin_read_committed(&ctx.db)
            .await
            .map_err(HandlerError::transient)?;
        let new: Vec<NewOrder<'_>> = orders
            .iter()
            .map(|m| NewOrder {
                order_id: &m.order_id,
                sale_id: &m.sale_id,
                user_id: &m.user_id,
            })
            .collect();
        let written = match write::insert_orders(&txn, &new, pay_within).await {
            Ok(w) => w,
            Err(WriteError::Db(e)) => return Err(HandlerError::transient(e)),
            Err(refused) => return Err(HandlerError::permanent(refused)),
        };
        // `None`: written by an earlier delivery.
        let written: Vec<_> = written.into_iter().flatten().collect();
        let timers: Vec<_> = written.iter().map(|(o, _)| timer_of(&o.id)).collect();
        outbox::enqueue_many(&txn, &timers, self.max_payload)
            .await
            .map_err(HandlerError::transient)?;
        txn.commit().await.map_err(HandlerError::transient)?;
        metrics::counter!("conveyor_flash_sale_orders_written_total")
            .increment(written.len() as u64);
        Ok(written.into_iter().flat_map(|(_, events)| events).collect())
    }
}

/// A message of a batch, read: the orders it carries and whether they can be written.
enum Read {
    /// To be written with the batch.
    Ready(Vec<CreateOrder>),
    /// Several orders, one of them refused: each goes back to the queue alone.
    Split(Vec<CreateOrder>),
    Failed(HandlerError),
}

impl CreateOrderHandler {
    /// Reads each message's orders and checks, all at once, that none was given back.
    async fn read(&self, messages: &[Envelope]) -> Vec<Read> {
        let parsed: Vec<Result<Vec<CreateOrder>, HandlerError>> = messages
            .iter()
            .map(|m| orders_of(m).map_err(HandlerError::permanent))
            .collect();
        let orders = parsed.iter().flatten().flatten();
        let checks = futures::future::join_all(orders.map(|o| self.given_back(o))).await;
        sort(parsed, checks)
    }

    /// Sends each of `orders` back to the queue alone (confirmed), where each gets its own
    /// answer: written, or dead-lettered with its reason and its unit given back.
    async fn split(
        &self,
        ctx: &Context,
        message: &Envelope,
        orders: &[CreateOrder],
    ) -> Result<(), HandlerError> {
        let alone = orders
            .iter()
            .map(|o| {
                let m = o.message().in_trace(message.traceparent.as_deref());
                Outgoing::new(Target::Queue(&ORDERS_CREATE), &m, self.max_payload)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(HandlerError::permanent)?;
        ctx.broker
            .publish_batch(&alone)
            .await
            .map_err(HandlerError::transient)?;
        tracing::info!(message = %message.id, orders = orders.len(), "an order in a message of several was refused; each goes again alone");
        Ok(())
    }
}

/// Each message with its orders' checks (`checks` in the order of the messages' orders):
/// ready, to split (one of several refused), or failed (unreadable, a check that could
/// not be made, its one order refused).
fn sort(
    parsed: Vec<Result<Vec<CreateOrder>, HandlerError>>,
    checks: Vec<Result<(), HandlerError>>,
) -> Vec<Read> {
    let mut checks = checks.into_iter();
    parsed
        .into_iter()
        .map(|p| {
            let orders = match p {
                Ok(orders) => orders,
                Err(e) => return Read::Failed(e),
            };
            // This message's checks, all taken before any answer: the next message's
            // follow them.
            let mine: Vec<_> = checks.by_ref().take(orders.len()).collect();
            let mut refused = None;
            for check in mine {
                match check {
                    Err(e @ HandlerError::Permanent(_)) => {
                        refused.get_or_insert(e);
                    }
                    Err(e) => return Read::Failed(e),
                    Ok(()) => {}
                }
            }
            match refused {
                None => Read::Ready(orders),
                Some(_) if orders.len() > 1 => Read::Split(orders),
                Some(e) => Read::Failed(e),
            }
        })
        .collect()
}

#[async_trait]
impl BatchHandler for CreateOrderHandler {
    async fn handle_batch(
        &self,
        ctx: &Context,
        messages: &[Envelope],
    ) -> Vec<Result<(), HandlerError>> {
        let mut read = self.read(messages).await;
        let ready: Vec<&CreateOrder> = read
            .iter()
            .filter_map(|r| match r {
                Read::Ready(orders) => Some(orders),
                _ => None,
            })
            .flatten()
            .collect();
        match self.write(ctx, &ready).await {
            Ok(events) => {
                if !events.is_empty() {
                    self.relay.notify();
                    publish_events(ctx.broker.as_ref(), &events).await;
                }
            }
            // Something in a batch was refused or failed: no answers, so the runtime runs
            // each message again alone (a batch of one), where each gets its own.
            Err(e) if messages.len() > 1 => {
                tracing::debug!(error = %e, size = messages.len(), "an order batch was refused as a whole");
                return Vec::new();
            }
            // Alone, and refused: a message of several orders sends each again alone; a
            // message of one is answered (a failed write means its orders were ready).
            Err(e @ HandlerError::Permanent(_)) => match read.pop() {
                Some(Read::Ready(orders)) if orders.len() > 1 => read.push(Read::Split(orders)),
                _ => return vec![Err(e)],
            },
            Err(e) => return vec![Err(e)],
        }
        let mut answers = Vec::with_capacity(messages.len());
        for (message, r) in messages.iter().zip(read) {
            answers.push(match r {
                Read::Ready(_) => Ok(()),
                Read::Split(orders) => self.split(ctx, message, &orders).await,
                Read::Failed(e) => Err(e),
            });
        }
        answers
    }

    async fn on_failure(
        &self,
        ctx: &Context,
        message: &Envelope,
        fate: &Fate,
    ) -> Result<(), HandlerError> {
        let Fate::DeadLetter { error, .. } = fate else {
            return Ok(());
        };
        let Ok(orders) = orders_of(message) else {
            return Ok(()); // nothing to give back for a payload we cannot read
        };
        // An order written already holds its unit in the database, whatever became of
        // this message (a batch committed before a crash loop quarantined it; an order
        // of a split message written from its own message): its unit stays sold.
        let written = write::written_ids(&ctx.db, orders.iter().map(|o| o.order_id.as_str()))
            .await
            .map_err(HandlerError::transient)?;
        for m in orders.iter().filter(|o| !written.contains(&o.order_id)) {
            let returned = self
                .sales
                .stock
                .give_back(&m.sale_id, &m.user_id, &m.order_id)
                .await
                .map_err(HandlerError::transient)?;
            tracing::warn!(order = %m.order_id, sale = %m.sale_id, returned, %error, "order not written; its unit went back");
        }
        Ok(())
    }
}

/// Cancels an order whose payment window passed, if it is still unpaid.
pub struct ExpireOrderHandler {
    pub sales: Arc<Sales>,
    /// Where the cancel's event is recorded.
    pub notices: Notices,
}

#[async_trait]
impl Handler for ExpireOrderHandler {
    async fn handle(&self, ctx: &Context, message: &Envelope) -> Result<(), HandlerError> {
        let m: ExpireOrder = payload(message)?;
        match self
            .sales
            .expire(&ctx.db, ctx.broker.as_ref(), &self.notices, &m.order_id)
            .await
            .map_err(HandlerError::transient)?
        {
            Some(_) => Ok(()),
            None => Err(HandlerError::permanent(format!("no order {}", m.order_id))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(id: &str) -> CreateOrder {
        CreateOrder {
            order_id: id.into(),
            sale_id: "s".into(),
            user_id: "u".into(),
        }
    }

    #[test]
    fn each_message_gets_its_own_orders_checks() {
        let parsed = vec![
            Ok(vec![order("a1"), order("a2")]),
            Err(HandlerError::permanent("invalid payload")),
            Ok(vec![order("b1"), order("b2")]),
            Ok(vec![order("c1"), order("c2")]),
            Ok(vec![order("d1")]),
        ];
        let checks = vec![
            // a: its first check could not be made; its second must not reach b.
            Err(HandlerError::transient("redis away")),
            Ok(()),
            // b: fine.
            Ok(()),
            Ok(()),
            // c: one of two given back.
            Ok(()),
            Err(HandlerError::permanent("given back")),
            // d: its one order given back.
            Err(HandlerError::permanent("given back")),
        ];
        let sorted = sort(parsed, checks);
        assert!(matches!(
            &sorted[0],
            Read::Failed(HandlerError::Transient(_))
        ));
        assert!(matches!(
            &sorted[1],
            Read::Failed(HandlerError::Permanent(_))
        ));
        assert!(matches!(&sorted[2], Read::Ready(o) if o.len() == 2));
        assert!(matches!(&sorted[3], Read::Split(o) if o[1].order_id == "c2"));
        assert!(matches!(
            &sorted[4],
            Read::Failed(HandlerError::Permanent(_))
        ));
        assert_eq!(sorted.len(), 5);
    }
}
