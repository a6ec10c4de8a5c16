//! Payments' effects as webhook events (`payment.succeeded` when a payment is granted,
//! `payment.refunded` when a refund is applied), recorded in the transaction that
//! applies the provider's event.

use sea_orm::{ConnectionTrait, DbErr};

use super::store::{self, Applied};
use super::view::PaymentView;
use crate::domains::webhooks::emit::{self, Event};

/// Records the event of what applying a provider event did to `payment_id`, if anything.
pub async fn applied(
    txn: &impl ConnectionTrait,
    payment_id: &str,
    outcome: &Applied,
) -> Result<(), DbErr> {
    let event_type = match outcome {
        Applied::Granted { .. } => "payment.succeeded",
        Applied::Refunded { .. } => "payment.refunded",
        _ => return Ok(()),
    };
    let Some(p) = store::get(txn, payment_id).await? else {
        return Ok(());
    };
    let events = store::events_of(txn, payment_id).await?;
    let event = Event {
        user_id: p.user_id.clone(),
        event_type,
        data: serde_json::to_value(PaymentView::new(p, events)).unwrap_or_default(),
    };
    emit::record_many(txn, &[event]).await
}
