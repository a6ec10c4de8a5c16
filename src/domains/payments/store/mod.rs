//! The queries of the payments flow. An event is applied under a lock on its inbox row,
//! taken when it is read, and only from `RECEIVED`: its transition (`RECEIVED → APPLIED`)
//! commits with its effect, so whoever applies it — the consumer, a redelivery, the
//! broker-down fallback — applies it once. Every apply then locks its payment's row, so
//! a payment's events are applied one at a time: the payment's own `CREATED → PAID`
//! transition makes a second paid event grant nothing, and a refund that arrives before
//! its payment waits (`WAITING`) until the paid event, which puts it back in line in its
//! own transaction.

mod apply;
mod inbox;
mod intents;
#[cfg(test)]
mod tests;

pub use apply::{Applied, apply, apply_many};
pub use inbox::{Incoming, backlog, receive, record, record_many, unapplied};
pub use intents::{NewPayment, count_open, create, events_of, expire_unpaid, get};

pub use super::entity::event::Model as Event;
pub use super::entity::payment::Model as Payment;

pub use super::entity::{EventStatus, PaymentStatus};
/// The inbox's event id column is this long.
pub const MAX_EVENT_ID: usize = 128;

/// What a provider event says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Paid,
    /// A refund of this many minor units.
    Refund(i64),
    /// A refund notice that carries the total refunded so far (Alipay's `refund_fee`):
    /// refunds up to that total, so notices applied in any order, or twice, give back
    /// exactly the total.
    RefundTotal(i64),
}

impl Kind {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Kind::Paid => "paid",
            Kind::Refund(_) => "refund",
            Kind::RefundTotal(_) => "refund_total",
        }
    }
}
