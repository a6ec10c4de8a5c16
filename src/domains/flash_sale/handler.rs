//! The consumers: write accepted orders (`orders.create`, in batches), cancel unpaid ones
//! when their timer fires (`orders.expire`).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::messages::{CreateOrder, EXPIRE_ORDER, ExpireOrder, OrderEvent, publish_events};
use super::queues::ORDER_PAYMENT_TIMEOUT;
use super::service::Sales;
use super::store::WriteError;
use super::write::{self, NewOrder};
use crate::broker::{Envelope, Target};
use crate::consumer::{BatchHandler, Context, Fate, Handler, HandlerError};
use crate::outbox::{self, Relay};

fn payload<T: serde::de::DeserializeOwned>(message: &Envelope) -> Result<T, HandlerError> {
    serde_json::from_value(message.payload.clone())
        .map_err(|e| HandlerError::permanent(format!("invalid payload: {e}")))
}

/// Writes the orders units were taken for, with their payment timers (through the
/// outbox, in the same transaction), a batch of deliveries at a time: one transaction
/// for the batch ([`super::write`]); if anything in it is refused, the batch goes
/// unanswered and the consumer runtime runs each order again alone, in a transaction of
/// its own, with its own answer. A permanent failure gives the unit and
/// the buyer's slot back (once per order) before the message is dead-lettered.
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

#[async_trait]
impl BatchHandler for CreateOrderHandler {
    async fn handle_batch(
        &self,
        ctx: &Context,
        messages: &[Envelope],
    ) -> Vec<Result<(), HandlerError>> {
        let parsed: Vec<Result<CreateOrder, HandlerError>> = messages.iter().map(payload).collect();
        // The given-back checks of the batch at once (one Redis round trip's time).
        let checks = futures::future::join_all(parsed.iter().map(|p| async move {
            match p {
                Ok(m) => self.given_back(m).await,
                Err(_) => Ok(()),
            }
        }))
        .await;
        let orders: Vec<Result<CreateOrder, HandlerError>> = parsed
            .into_iter()
            .zip(checks)
            .map(|(p, c)| p.and_then(|m| c.map(|()| m)))
            .collect();
        let ready: Vec<&CreateOrder> = orders.iter().filter_map(|o| o.as_ref().ok()).collect();
        match self.write(ctx, &ready).await {
            Ok(events) => {
                if !events.is_empty() {
                    self.relay.notify();
                    publish_events(ctx.broker.as_ref(), &events).await;
                }
                orders.into_iter().map(|o| o.map(|_| ())).collect()
            }
            // Something in a batch was refused or failed: no answers, so the runtime runs
            // each message again alone (a batch of one), where each gets its own.
            Err(e) if messages.len() > 1 => {
                tracing::debug!(error = %e, size = messages.len(), "an order batch was refused as a whole");
                Vec::new()
            }
            // Alone (a failed write means its one order was ready).
            Err(e) => vec![Err(e)],
        }
    }

    async fn on_failure(
        &self,
        _ctx: &Context,
        message: &Envelope,
        fate: &Fate,
    ) -> Result<(), HandlerError> {
        let Fate::DeadLetter { error, .. } = fate else {
            return Ok(());
        };
        let Ok(m) = payload::<CreateOrder>(message) else {
            return Ok(()); // nothing to give back for a payload we cannot read
        };
        let returned = self
            .sales
            .stock
            .give_back(&m.sale_id, &m.user_id, &m.order_id)
            .await
            .map_err(HandlerError::transient)?;
        tracing::warn!(order = %m.order_id, sale = %m.sale_id, returned, %error, "order not written; its unit went back");
        Ok(())
    }
}

/// Cancels an order whose payment window passed, if it is still unpaid.
pub struct ExpireOrderHandler {
    pub sales: Arc<Sales>,
}

#[async_trait]
impl Handler for ExpireOrderHandler {
    async fn handle(&self, ctx: &Context, message: &Envelope) -> Result<(), HandlerError> {
        let m: ExpireOrder = payload(message)?;
        match self
            .sales
            .expire(&ctx.db, ctx.broker.as_ref(), &m.order_id)
            .await
            .map_err(HandlerError::transient)?
        {
            Some(_) => Ok(()),
            None => Err(HandlerError::permanent(format!("no order {}", m.order_id))),
        }
    }
}
