//! The `payments.apply` consumer: applies one verified event, once. The broker-down
//! fallback ([`super::fallback`]) applies through the same [`apply`].

use async_trait::async_trait;

use super::store::{self, Applied};
use crate::broker::Envelope;
use crate::consumer::{Context, Handler, HandlerError};
use crate::domains::flash_sale::messages::publish_events;
use crate::outbox::OutboxError;
use crate::platform::Platform;

pub struct ApplyHandler {
    pub platform: Platform,
}

#[async_trait]
impl Handler for ApplyHandler {
    async fn handle(&self, _: &Context, message: &Envelope) -> Result<(), HandlerError> {
        let id = message.payload["event"]
            .as_i64()
            .ok_or_else(|| HandlerError::permanent("payload needs an integer `event`"))?;
        match apply(&self.platform, id)
            .await
            .map_err(HandlerError::transient)?
        {
            Applied::NoSuchEvent => Err(HandlerError::permanent(format!("no payment event {id}"))),
            _ => Ok(()),
        }
    }
}

/// Applies inbox row `id` (once, whoever calls), then tells what it did: metrics, logs,
/// the order's live event, the relay (refunds put back in line are in the outbox).
pub async fn apply(platform: &Platform, id: i64) -> Result<Applied, OutboxError> {
    let max = platform.settings.broker.max_payload_bytes;
    let applied = store::apply(&platform.db, id, max).await?;
    match &applied {
        Applied::Granted {
            user_id,
            credits,
            membership_until,
            order_event,
        } => {
            metrics::counter!("conveyor_payments_applied_total", "outcome" => "granted")
                .increment(1);
            metrics::counter!("conveyor_credits_total", "effect" => "granted")
                .increment((*credits).max(0) as u64);
            tracing::info!(event = id, user = %user_id, credits, ?membership_until, order = ?order_event.as_ref().map(|e| &e.order_id), "payment applied");
            if let Some(ev) = order_event {
                publish_events(platform.broker.as_ref(), std::slice::from_ref(ev)).await;
            }
            platform.relay.notify();
        }
        Applied::RefundDue { order_id } => {
            metrics::counter!("conveyor_payments_applied_total", "outcome" => "refund_due")
                .increment(1);
            tracing::warn!(event = id, order = %order_id, "payment for an order canceled or paid otherwise: refund due");
            platform.relay.notify();
        }
        Applied::Refunded {
            user_id,
            credits,
            shortfall,
        } => {
            metrics::counter!("conveyor_payments_applied_total", "outcome" => "refunded")
                .increment(1);
            metrics::counter!("conveyor_credits_total", "effect" => "taken_back")
                .increment((*credits).max(0) as u64);
            if *shortfall > 0 {
                metrics::counter!("conveyor_payments_refund_shortfall_credits_total")
                    .increment(*shortfall as u64);
                tracing::warn!(event = id, user = %user_id, shortfall, "refund could not take back credits already spent (shortfall recorded)");
            } else {
                tracing::info!(event = id, user = %user_id, credits, "refund applied");
            }
        }
        Applied::Waiting => {
            metrics::counter!("conveyor_payments_applied_total", "outcome" => "waiting")
                .increment(1);
            tracing::info!(event = id, "refund before its payment: waiting");
        }
        Applied::AlreadyPaid | Applied::NothingLeft | Applied::Before | Applied::NoSuchEvent => {}
    }
    Ok(applied)
}
