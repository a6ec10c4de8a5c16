//! [`Sales`]: what the flow's routes, handlers and jobs share in one process (the stock
//! store, the settings, the payment window), and the operations more than one of them
//! runs: warming a sale, cancelling an overdue order, reconciling a sale.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use sea_orm::DatabaseConnection;

use super::OrderStatus;
use super::messages::publish_events;
use super::notify::Notices;
use super::queues::ORDER_PAYMENT_TIMEOUT;
use super::settings::FlashSaleSettings;
use super::stock::{EmbeddedStock, RedisStock, StockStore, Warm};
use super::store::{self, Sale};
use crate::broker::{Broker, Topology};
use crate::dedupe::settings::DedupeKind;
use crate::settings::Settings;

pub struct Sales {
    pub stock: Arc<dyn StockStore>,
    pub settings: FlashSaleSettings,
    /// How long a buyer has to pay (the payment-timeout delay).
    pub pay_within: Duration,
}

impl Sales {
    /// Connects the stock store the settings name (a new, empty one when embedded: only
    /// the process that serves sees its embedded stock).
    pub async fn connect(settings: &Settings, topology: &Topology) -> anyhow::Result<Sales> {
        let dedupe = &settings.dedupe;
        let stock: Arc<dyn StockStore> = match dedupe.kind {
            DedupeKind::Embedded => Arc::new(EmbeddedStock::default()),
            DedupeKind::Redis => Arc::new(
                RedisStock::connect(&dedupe.url, &dedupe.key_prefix)
                    .await
                    .context("connecting the flash-sale stock store")?,
            ),
        };
        Ok(Sales {
            stock,
            settings: FlashSaleSettings::from_settings(settings)?,
            pay_within: topology.delay(&ORDER_PAYMENT_TIMEOUT).delay,
        })
    }

    /// Loads a sale into the stock store unless it is there: units left are the stock
    /// less the units live orders hold, so a re-warm after a restart never counts a
    /// taken unit twice. True when it loaded now.
    pub async fn warm(&self, db: &DatabaseConnection, sale: &Sale) -> anyhow::Result<bool> {
        if self.stock.remaining(&sale.id).await?.is_some() {
            return Ok(false);
        }
        let warm = Warm {
            sale_id: sale.id.clone(),
            remaining: i64::from(sale.stock - sale.sold),
            limit: i64::from(sale.per_user_limit),
            starts_ms: sale.starts_at.timestamp_millis(),
            ends_ms: sale.ends_at.timestamp_millis(),
            bought: store::bought(db, &sale.id).await?,
        };
        Ok(self.stock.warm(&warm).await?)
    }

    /// Cancels an order still UNPAID and gives its unit back; a CANCELED order whose
    /// unit did not come back yet (a crash in between) gets it back now; a PAID order is
    /// left alone. Safe to repeat: the transition and the give-back each happen once.
    pub async fn expire(
        &self,
        db: &DatabaseConnection,
        broker: &dyn Broker,
        notices: &Notices,
        order_id: &str,
    ) -> anyhow::Result<Option<OrderStatus>> {
        let order = match store::cancel_unpaid(db, notices, order_id).await? {
            Some((order, ev)) => {
                metrics::counter!("conveyor_flash_sale_orders_canceled_total").increment(1);
                publish_events(broker, &[ev]).await;
                order
            }
            // Not UNPAID: paid, or canceled before (its unit may still have to come back).
            None => match store::get_order(db, order_id).await? {
                Some(order) => order,
                None => return Ok(None),
            },
        };
        if order.status == OrderStatus::Canceled {
            self.stock
                .give_back(&order.sale_id, &order.user_id, &order.id)
                .await?;
        }
        Ok(Some(order.status))
    }

    /// Redis units left + live orders (UNPAID, PAID) against the sale's stock. Orders
    /// still in flight (QUEUED: taken, not yet written) count as drift until written, so
    /// repair only a quiet sale.
    pub async fn reconcile(
        &self,
        db: &DatabaseConnection,
        sale: &Sale,
        repair: bool,
    ) -> anyhow::Result<Reconciled> {
        let live = store::live_orders(db, &sale.id).await? as i64;
        let remaining = self.stock.remaining(&sale.id).await?;
        let drift = remaining.map(|r| i64::from(sale.stock) - r - live);
        let mut repaired = false;
        if repair && drift.is_some_and(|d| d != 0) {
            self.stock
                .set_remaining(&sale.id, i64::from(sale.stock) - live)
                .await?;
            repaired = true;
        }
        Ok(Reconciled {
            sale_id: sale.id.clone(),
            stock: i64::from(sale.stock),
            remaining,
            live_orders: live,
            drift,
            repaired,
        })
    }
}

/// One reconciliation of a sale.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Reconciled {
    pub sale_id: String,
    pub stock: i64,
    /// Units left in the stock store; null when the sale is not loaded there.
    pub remaining: Option<i64>,
    /// UNPAID + PAID orders.
    pub live_orders: i64,
    /// stock − remaining − live orders: units taken with no order written (in flight,
    /// or lost between the script and the publish); negative means oversold.
    pub drift: Option<i64>,
    /// The stock store was set to stock − live orders.
    pub repaired: bool,
}
