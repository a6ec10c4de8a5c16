//! The consumers: write accepted orders (`orders.create`), cancel unpaid ones when their
//! timer fires (`orders.expire`).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::messages::{CreateOrder, EXPIRE_ORDER, ExpireOrder, publish_events};
use super::queues::ORDER_PAYMENT_TIMEOUT;
use super::service::Sales;
use super::store::{self, WriteError};
use crate::broker::{Envelope, Target};
use crate::consumer::{Context, Fate, Handler, HandlerError};
use crate::outbox::{self, Relay};

fn payload<T: serde::de::DeserializeOwned>(message: &Envelope) -> Result<T, HandlerError> {
    serde_json::from_value(message.payload.clone())
        .map_err(|e| HandlerError::permanent(format!("invalid payload: {e}")))
}

/// Writes the order a unit was taken for, with its payment timer (through the outbox, in
/// the same transaction). A permanent failure gives the unit and the buyer's slot back
/// (once per order) before the message is dead-lettered.
pub struct CreateOrderHandler {
    pub sales: Arc<Sales>,
    pub relay: Relay,
    pub max_payload: usize,
}

#[async_trait]
impl Handler for CreateOrderHandler {
    async fn handle(&self, ctx: &Context, message: &Envelope) -> Result<(), HandlerError> {
        let m: CreateOrder = payload(message)?;
        // A dead letter replayed after its unit went back must not write an order that
        // holds no unit.
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
        let pay_within =
            chrono::Duration::from_std(self.sales.pay_within).map_err(HandlerError::permanent)?;
        let txn = crate::db::begin_read_committed(&ctx.db)
            .await
            .map_err(HandlerError::transient)?;
        let written = match store::insert_order(
            &txn,
            &m.order_id,
            &m.sale_id,
            &m.user_id,
            pay_within,
        )
        .await
        {
            Ok(w) => w,
            Err(WriteError::Db(e)) => return Err(HandlerError::transient(e)),
            Err(refused) => return Err(HandlerError::permanent(refused)),
        };
        let Some((order, events)) = written else {
            // Written by an earlier delivery.
            return Ok(());
        };
        let timer = Envelope::new(
            EXPIRE_ORDER,
            json!(ExpireOrder {
                order_id: order.id.clone()
            }),
        )
        .with_correlation_id(order.id.clone());
        outbox::enqueue(
            &txn,
            Target::Delay(&ORDER_PAYMENT_TIMEOUT),
            &timer,
            self.max_payload,
        )
        .await
        .map_err(HandlerError::transient)?;
        txn.commit().await.map_err(HandlerError::transient)?;
        self.relay.notify();
        metrics::counter!("conveyor_flash_sale_orders_written_total").increment(1);
        publish_events(ctx.broker.as_ref(), &events).await;
        Ok(())
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
