//! What clients see of a sale and an order, and the intake's answer.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::OrderStatus;
use super::entity::{order::Model as Order, sale::Model as Sale};

/// Where a sale stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SaleState {
    Upcoming,
    Active,
    SoldOut,
    Ended,
}

/// What clients see of a sale.
#[derive(Debug, Serialize, ToSchema)]
pub struct SaleView {
    pub id: String,
    pub item: String,
    /// In the minor unit of `currency`.
    pub price: i64,
    /// ISO 4217 (`flash_sale.currency`).
    pub currency: String,
    pub stock: i32,
    pub per_user_limit: i32,
    /// Units left to take (from the stock store; stock − held orders when it is cold).
    pub remaining: i64,
    pub state: SaleState,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

impl SaleView {
    pub fn new(s: Sale, remaining: Option<i64>, currency: &str) -> Self {
        let remaining = remaining.unwrap_or(i64::from(s.stock - s.sold)).max(0);
        let now = Utc::now();
        let state = if now < s.starts_at {
            SaleState::Upcoming
        } else if now >= s.ends_at {
            SaleState::Ended
        } else if remaining == 0 {
            SaleState::SoldOut
        } else {
            SaleState::Active
        };
        SaleView {
            id: s.id,
            item: s.item,
            price: s.price,
            currency: currency.to_owned(),
            stock: s.stock,
            per_user_limit: s.per_user_limit,
            remaining,
            state,
            starts_at: s.starts_at,
            ends_at: s.ends_at,
            created_at: s.created_at,
        }
    }
}

/// What a buyer sees of an order.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrderView {
    pub id: String,
    pub sale_id: String,
    pub status: OrderStatus,
    /// In the minor unit of `currency`.
    pub price: i64,
    /// ISO 4217 (`flash_sale.currency`).
    pub currency: String,
    /// Pay before this, or the order is canceled and its unit goes back.
    pub pay_by: DateTime<Utc>,
    pub payment_ref: Option<String>,
    /// A payment arrived after the cancel: it is to be refunded, the order stays canceled.
    pub paid_after_cancel: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl OrderView {
    pub fn new(o: Order, currency: &str) -> Self {
        OrderView {
            currency: currency.to_owned(),
            paid_after_cancel: o.late_payment_ref.is_some(),
            id: o.id,
            sale_id: o.sale_id,
            status: o.status,
            price: o.price,
            pay_by: o.pay_by,
            payment_ref: o.payment_ref,
            created_at: o.created_at,
            updated_at: o.updated_at,
        }
    }
}

/// The intake answer: the order is on its way.
#[derive(Debug, Serialize, ToSchema)]
pub struct Accepted {
    pub order_id: String,
    pub status: OrderStatus,
}
