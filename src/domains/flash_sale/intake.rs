//! Order intake: one unit taken from the stock store (or the reason why not), the order
//! published with a confirm (in a message it may share with orders taken meanwhile,
//! [`super::publisher`]), and nothing written to the database: the `orders`
//! consumer writes the order. If the publish fails the unit goes back, so a unit is
//! never taken without an order on its way.

use chrono::Utc;
use sea_orm::DatabaseConnection;
use sha2::{Digest as _, Sha256};

use super::OrderStatus;
use super::messages::CreateOrder;
use super::publisher::Publisher;
use super::service::Sales;
use super::stock::Take;
use super::store;

/// A unit is the buyer's: the order is on its way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub order_id: String,
    /// QUEUED, or, for a keyed request seen before, where that order stands now.
    pub status: OrderStatus,
}

/// Why no unit was taken.
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    #[error("no such flash sale")]
    NoSuchSale,
    #[error("sold out")]
    SoldOut,
    #[error("you hold as many units of this sale as it allows")]
    LimitReached,
    #[error("the sale has not started or has ended")]
    NotActive,
    /// The stock store or the broker is away; nothing was taken.
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Db(#[from] sea_orm::DbErr),
}

impl IntakeError {
    /// The refusal's code (`sold_out`, …), for answers and the intake metric.
    pub fn code(&self) -> &'static str {
        match self {
            IntakeError::NoSuchSale => "not_found",
            IntakeError::SoldOut => "sold_out",
            IntakeError::LimitReached => "limit_reached",
            IntakeError::NotActive => "not_active",
            IntakeError::Unavailable(_) => "unavailable",
            IntakeError::Db(_) => "error",
        }
    }
}

/// The order id of a keyed request: the same (buyer, sale, key) always names the same
/// order, and the stock script takes at most one unit per order id.
fn keyed_order_id(user_id: &str, sale_id: &str, key: &str) -> String {
    let digest = Sha256::digest(format!("{user_id}\0{sale_id}\0{key}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes)
        .into_uuid()
        .to_string()
}

fn outcome(outcome: &'static str) {
    metrics::counter!("conveyor_flash_sale_intake_total", "outcome" => outcome).increment(1);
}

fn unavailable(e: impl std::fmt::Display) -> IntakeError {
    tracing::warn!(error = %e, "flash-sale stock store unavailable");
    IntakeError::Unavailable("the stock store is unavailable".into())
}

impl Sales {
    /// Takes one unit of `sale_id` for `user_id` and queues its order. `key` (an
    /// Idempotency-Key) makes a repeat name the same order and take no second unit.
    pub async fn take_order(
        &self,
        db: &DatabaseConnection,
        publisher: &Publisher,
        user_id: &str,
        sale_id: &str,
        key: Option<&str>,
    ) -> Result<Taken, IntakeError> {
        let taken = self.take_unit(db, publisher, user_id, sale_id, key).await;
        outcome(match &taken {
            Ok(t) if t.status != OrderStatus::Queued => "replayed",
            Ok(_) => "accepted",
            Err(e) => e.code(),
        });
        taken
    }

    async fn take_unit(
        &self,
        db: &DatabaseConnection,
        publisher: &Publisher,
        user_id: &str,
        sale_id: &str,
        key: Option<&str>,
    ) -> Result<Taken, IntakeError> {
        let order_id = match key {
            Some(k) => keyed_order_id(user_id, sale_id, k),
            None => uuid::Uuid::now_v7().to_string(),
        };
        let now = Utc::now().timestamp_millis();
        let take = || self.stock.take(sale_id, user_id, &order_id, now);
        let mut took = take().await.map_err(unavailable)?;
        if took == Take::NotLoaded {
            // A cold store (a restart of an embedded server, a lost Redis): load the
            // sale from the database, then try again.
            let sale = store::get_sale(db, sale_id)
                .await?
                .ok_or(IntakeError::NoSuchSale)?;
            self.warm(db, &sale).await.map_err(unavailable)?;
            took = take().await.map_err(unavailable)?;
        }
        match took {
            Take::Taken { .. } => {}
            Take::Duplicate => {
                // The same keyed request again: the same order, no second unit.
                let status = store::get_order(db, &order_id)
                    .await?
                    .map_or(OrderStatus::Queued, |o| o.status);
                return Ok(Taken { order_id, status });
            }
            Take::SoldOut => return Err(IntakeError::SoldOut),
            Take::LimitReached => return Err(IntakeError::LimitReached),
            Take::NotActive => return Err(IntakeError::NotActive),
            Take::NotLoaded => return Err(IntakeError::NoSuchSale),
        }
        let order = CreateOrder {
            order_id: order_id.clone(),
            sale_id: sale_id.to_owned(),
            user_id: user_id.to_owned(),
        };
        if let Err(why) = publisher.publish(order).await {
            // Never a unit taken without an order on its way: give it back.
            let back = self.stock.give_back(sale_id, user_id, &order_id).await;
            tracing::warn!(order = %order_id, error = %why, returned = ?back.is_ok(), "order not published; unit given back");
            return Err(IntakeError::Unavailable(
                "orders cannot be queued right now".into(),
            ));
        }
        // No live event here: the order's share of a broker message is the intake's
        // whole cost. The QUEUED event is stored with the order and goes out with UNPAID,
        // in one message.
        Ok(Taken {
            order_id,
            status: OrderStatus::Queued,
        })
    }
}
