//! Payments' effects as events (`payment.succeeded` when a payment is granted,
//! `payment.refunded` when a refund is applied), recorded through the event seam
//! (`crate::events`) in the transaction that applies the provider's event. A payment
//! for a flash-sale order pays the order in that transaction too, so applying records
//! the order's event as well: [`Notify`] carries both.

use sea_orm::{ConnectionTrait, DbErr};

use super::store::{self, Applied};
use super::view::PaymentView;
use crate::config::ConfigError;
use crate::domains::flash_sale::notify::Notices;
use crate::events::{Event, EventType, Events};
use crate::settings::Settings;

pub const SUCCEEDED: EventType = EventType::new(
    "payment.succeeded",
    "a payment was granted (credits, a membership, its order paid)",
);
pub const REFUNDED: EventType = EventType::new("payment.refunded", "a refund was applied");

/// The event types payments record.
pub const EVENTS: &[&EventType] = &[&SUCCEEDED, &REFUNDED];

/// Where applying a provider's event records what it did: the seam, and the orders'
/// notices (their currency).
#[derive(Clone, Debug)]
pub struct Notify {
    pub events: Events,
    pub orders: Notices,
}

impl Notify {
    /// Orders priced in `currency` (`flash_sale.currency`, which payments bill in).
    pub fn new(events: Events, currency: &str) -> Self {
        Notify {
            orders: Notices::new(events.clone(), currency),
            events,
        }
    }

    pub fn from_settings(events: Events, settings: &Settings) -> Result<Self, ConfigError> {
        Ok(Notify {
            orders: Notices::from_settings(events.clone(), settings)?,
            events,
        })
    }

    /// Records the event of what applying a provider event did to `payment_id`, if
    /// anything.
    pub async fn applied(
        &self,
        txn: &impl ConnectionTrait,
        payment_id: &str,
        outcome: &Applied,
    ) -> Result<(), DbErr> {
        let kind = match outcome {
            Applied::Granted { .. } => &SUCCEEDED,
            Applied::Refunded { .. } => &REFUNDED,
            _ => return Ok(()),
        };
        let Some(p) = store::get(txn, payment_id).await? else {
            return Ok(());
        };
        let events = store::events_of(txn, payment_id).await?;
        let user = p.user_id.clone();
        let data = serde_json::to_value(PaymentView::new(p, events)).unwrap_or_default();
        Ok(self
            .events
            .record(txn, vec![Event::new(user, kind, data)])
            .await?)
    }
}
