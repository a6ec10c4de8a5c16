//! The wire contract of the flash-sale flow.

use serde::{Deserialize, Serialize};

use crate::broker::{Broker, Envelope};

/// Envelope kind of [`CreateOrder`].
pub const CREATE_ORDER: &str = "flash_sale.order.create";
/// Envelope kind of [`CreateOrders`].
pub const CREATE_ORDERS: &str = "flash_sale.order.create_many";
/// Envelope kind of [`ExpireOrder`].
pub const EXPIRE_ORDER: &str = "flash_sale.order.expire";
/// The live stream kind of order events.
pub const STREAM: &str = "order";

/// Write the order a buyer's unit was taken for (published right after the Lua script).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CreateOrder {
    pub order_id: String,
    pub sale_id: String,
    pub user_id: String,
}

impl CreateOrder {
    /// The order alone in a message ([`CREATE_ORDER`]): the message id is the order id.
    pub fn message(&self) -> Envelope {
        Envelope::new(CREATE_ORDER, serde_json::json!(self))
            .with_id(self.order_id.clone())
            .with_correlation_id(self.order_id.clone())
    }
}

/// Several orders in one message, written together (intake packs the orders whose
/// requests met while a confirm was awaited: one persistent message and one confirm
/// for all of them, where RabbitMQ's cost is per message). The consumer gives each order
/// its own outcome: one it refuses goes back to the queue alone as a [`CreateOrder`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CreateOrders {
    pub orders: Vec<CreateOrder>,
}

/// The message of `orders`: one order as [`CREATE_ORDER`] (what every consumer
/// version reads), several as [`CREATE_ORDERS`].
pub fn orders_message(orders: Vec<CreateOrder>) -> Envelope {
    if let [one] = orders.as_slice() {
        return one.message();
    }
    Envelope::new(CREATE_ORDERS, serde_json::json!(CreateOrders { orders }))
}

/// The orders a message of `orders.create` carries: its one, or its several.
pub fn orders_of(message: &Envelope) -> Result<Vec<CreateOrder>, String> {
    let invalid = |e: serde_json::Error| format!("invalid payload: {e}");
    if message.kind != CREATE_ORDERS {
        return CreateOrder::deserialize(&message.payload)
            .map(|o| vec![o])
            .map_err(invalid);
    }
    let many = CreateOrders::deserialize(&message.payload).map_err(invalid)?;
    if many.orders.is_empty() {
        return Err("invalid payload: a message of orders without orders".into());
    }
    Ok(many.orders)
}

/// The order's payment deadline passed: cancel it if it is still unpaid.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ExpireOrder {
    pub order_id: String,
}

/// An order's status change, as stored and as pushed to its buyer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct OrderEvent {
    pub order_id: String,
    pub user_id: String,
    pub seq: i32,
    pub status: super::OrderStatus,
    pub message: Option<String>,
    pub at: chrono::DateTime<chrono::Utc>,
}

impl OrderEvent {
    /// The event as the `order` live stream carries it.
    pub fn live(&self) -> crate::live::Event {
        let mut data = serde_json::Map::new();
        data.insert("order_id".into(), self.order_id.clone().into());
        data.insert("status".into(), self.status.as_str().into());
        data.insert("message".into(), serde_json::json!(self.message));
        data.insert("at".into(), serde_json::json!(self.at));
        let seq = i64::from(self.seq);
        crate::live::Event::new(STREAM, &self.order_id, &self.user_id, seq, data)
            .terminal(self.status.is_terminal())
    }
}

/// Publishes events after their transaction committed; best effort (they are stored).
pub async fn publish_events(broker: &dyn Broker, events: &[OrderEvent]) {
    let live: Vec<_> = events.iter().map(OrderEvent::live).collect();
    crate::live::publish(broker, &live).await;
}
