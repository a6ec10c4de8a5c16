//! Orders' final states as events (`order.paid`, `order.canceled`), recorded through the
//! event seam (`crate::events`) in the transaction of the transition: every order leaves
//! UNPAID through [`store`](super::store)'s one conditional update, which calls
//! [`Notices::left_unpaid`]. The currency the event's view shows travels with the
//! [`Notices`] built at install, not in a global.

use std::sync::Arc;

use sea_orm::{ConnectionTrait, DbErr};

use super::entity::order::Model as Order;
use super::settings::FlashSaleSettings;
use super::status::OrderStatus;
use super::view::OrderView;
use crate::config::ConfigError;
use crate::events::{Event, EventType, Events};
use crate::settings::Settings;

pub const PAID: EventType = EventType::new("order.paid", "a flash-sale order was paid");
pub const CANCELED: EventType = EventType::new(
    "order.canceled",
    "an unpaid flash-sale order was canceled (its payment window passed)",
);

/// The event types flash sales record.
pub const EVENTS: &[&EventType] = &[&PAID, &CANCELED];

/// What recording an order's events needs: the seam, and `flash_sale.currency` (the
/// order rows hold minor units only). Built at install, and by payments, which pays
/// orders in its own transactions.
#[derive(Clone, Debug)]
pub struct Notices {
    events: Events,
    currency: Arc<str>,
}

impl Notices {
    pub fn new(events: Events, currency: &str) -> Self {
        Notices {
            events,
            currency: currency.into(),
        }
    }

    /// With the currency of `[flash_sale]`.
    pub fn from_settings(events: Events, settings: &Settings) -> Result<Self, ConfigError> {
        let currency = FlashSaleSettings::from_settings(settings)?.currency;
        Ok(Notices::new(events, &currency))
    }

    /// Records the event of an order that left UNPAID for `o.status`.
    pub async fn left_unpaid(&self, txn: &impl ConnectionTrait, o: &Order) -> Result<(), DbErr> {
        let kind = match o.status {
            OrderStatus::Paid => &PAID,
            OrderStatus::Canceled => &CANCELED,
            _ => return Ok(()),
        };
        let data =
            serde_json::to_value(OrderView::new(o.clone(), &self.currency)).unwrap_or_default();
        let event = Event::new(o.user_id.clone(), kind, data);
        Ok(self.events.record(txn, vec![event]).await?)
    }
}
