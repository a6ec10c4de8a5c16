//! Orders' final states as webhook events (`order.paid`, `order.canceled`), recorded in
//! the transaction of the transition: every order leaves UNPAID through
//! [`store`](super::store)'s one conditional update, which calls [`left_unpaid`].

use std::sync::OnceLock;

use sea_orm::{ConnectionTrait, DbErr};

use super::entity::order::Model as Order;
use super::status::OrderStatus;
use super::view::OrderView;
use crate::domains::webhooks::emit::{self, Event};

/// `flash_sale.currency`, set at install (the order rows hold minor units only).
static CURRENCY: OnceLock<String> = OnceLock::new();

pub fn set_currency(currency: &str) {
    let _ = CURRENCY.set(currency.to_owned());
}

/// Records the event of an order that left UNPAID for `o.status`.
pub async fn left_unpaid(txn: &impl ConnectionTrait, o: &Order) -> Result<(), DbErr> {
    let event_type = match o.status {
        OrderStatus::Paid => "order.paid",
        OrderStatus::Canceled => "order.canceled",
        _ => return Ok(()),
    };
    let currency = CURRENCY.get().map_or("CNY", String::as_str);
    let event = Event {
        user_id: o.user_id.clone(),
        event_type,
        data: serde_json::to_value(OrderView::new(o.clone(), currency)).unwrap_or_default(),
    };
    emit::record_many(txn, &[event]).await
}
