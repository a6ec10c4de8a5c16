//! What clients see of a payment and its provider events.

use serde::Serialize;
use utoipa::ToSchema;

use super::store::{self, Payment};

/// What a client needs to pay, provider-agnostic, and what became of it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PaymentView {
    pub id: String,
    /// Our order number at the provider (the payment id).
    pub out_trade_no: String,
    /// The product, or `order` for a flash-sale order.
    pub product: String,
    pub order_id: Option<String>,
    pub credits: i64,
    /// Months of membership it buys.
    pub membership_months: i32,
    /// In the currency's minor unit.
    pub amount: i64,
    pub currency: String,
    /// `CREATED`, `PAID`, `REFUNDED`, `REFUND_DUE` (the order was canceled first) or
    /// `EXPIRED` (unpaid after `payments.intent_ttl_secs`; a payment that still arrives is
    /// granted).
    pub status: store::PaymentStatus,
    pub refunded_amount: i64,
    /// Credits a refund could not take back (spent already).
    pub shortfall: i64,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub paid_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The provider events received for it, oldest first.
    pub events: Vec<EventView>,
}

/// One provider event of a payment.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventView {
    pub provider: String,
    pub event_id: String,
    /// `paid`, `refund` or `refund_total` (Alipay: refunds up to a total).
    pub kind: String,
    /// A refund's amount (`refund_total`: the total refunded by then).
    pub amount: i64,
    /// `RECEIVED`, `WAITING` (a refund before its payment) or `APPLIED`.
    pub status: store::EventStatus,
    pub note: Option<String>,
    pub received_at: chrono::DateTime<chrono::Utc>,
    pub applied_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl PaymentView {
    pub fn new(p: Payment, events: Vec<store::Event>) -> Self {
        PaymentView {
            out_trade_no: p.id.clone(),
            id: p.id,
            product: p.product,
            order_id: p.order_id,
            credits: p.credits,
            membership_months: p.membership_months,
            amount: p.amount,
            currency: p.currency,
            status: p.status,
            refunded_amount: p.refunded_amount,
            shortfall: p.shortfall,
            created_at: p.created_at,
            paid_at: p.paid_at,
            events: events
                .into_iter()
                .map(|e| EventView {
                    provider: e.provider,
                    event_id: e.event_id,
                    kind: e.kind,
                    amount: e.amount,
                    status: e.status,
                    note: e.note,
                    received_at: e.received_at,
                    applied_at: e.applied_at,
                })
                .collect(),
        }
    }
}
