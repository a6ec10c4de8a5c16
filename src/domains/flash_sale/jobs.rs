//! Background jobs of the `orders` group: the sweep that cancels unpaid orders whose
//! timer went missing, and the reconciliation of every running sale (which also warms a
//! cold stock store from the database after a restart).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::future::BoxFuture;
use sea_orm::DatabaseConnection;
use tokio_util::sync::CancellationToken;

use super::notify::Notices;
use super::service::Sales;
use super::store;
use crate::broker::Broker;
use crate::telemetry::gauges::Gauge;

/// Runs `round` every `every` until `shutdown`; a failed round is logged, not fatal.
async fn every<F>(
    what: &'static str,
    every: Duration,
    shutdown: CancellationToken,
    mut round: F,
) -> anyhow::Result<()>
where
    F: FnMut() -> BoxFuture<'static, anyhow::Result<()>>,
{
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(every) => {}
        }
        if let Err(e) = round().await {
            tracing::warn!(job = what, error = %e, "flash-sale job round failed");
        }
    }
}

/// Cancels UNPAID orders past their deadline + `sweep_margin_ms`: a lost timer message
/// can never leave an order open for ever. Returns how many it canceled.
pub async fn sweep_once(
    db: &DatabaseConnection,
    broker: &dyn Broker,
    sales: &Sales,
    notices: &Notices,
) -> anyhow::Result<usize> {
    let margin = chrono::Duration::milliseconds(sales.settings.sweep_margin_ms as i64);
    let overdue = store::overdue(db, Utc::now() - margin, 500).await?;
    let mut canceled = 0;
    for order in overdue {
        let expired = sales.expire(db, broker, notices, &order.id).await?;
        if expired == Some(super::OrderStatus::Canceled) {
            canceled += 1;
        }
    }
    if canceled > 0 {
        tracing::warn!(
            orders = canceled,
            "sweep canceled unpaid orders whose timer went missing"
        );
    }
    Ok(canceled)
}

/// Warms and reconciles every running sale; drift is a gauge and a log line.
pub async fn reconcile_once(db: &DatabaseConnection, sales: &Sales) -> anyhow::Result<()> {
    for sale in store::running_sales(db).await? {
        sales.warm(db, &sale).await?;
        let r = sales.reconcile(db, &sale, false).await?;
        let drift = r.drift.unwrap_or(0);
        metrics::gauge!("conveyor_flash_sale_drift_units", "sale" => sale.id.clone())
            .set(drift as f64);
        if let Some(left) = r.remaining {
            metrics::gauge!("conveyor_flash_sale_stock_remaining", "sale" => sale.id.clone())
                .set(left as f64);
        }
        if drift != 0 {
            tracing::warn!(sale = %sale.id, drift, remaining = ?r.remaining, live = r.live_orders, "flash-sale stock drift (orders in flight count until written)");
        }
    }
    Ok(())
}

/// The sweep and the reconciliation, each on its own interval, until `shutdown`.
pub async fn run(
    db: DatabaseConnection,
    broker: Arc<dyn Broker>,
    sales: Arc<Sales>,
    notices: Notices,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let sweep = {
        let (db, broker, s) = (db.clone(), broker.clone(), sales.clone());
        let notices = notices.clone();
        every(
            "sweep",
            Duration::from_millis(sales.settings.sweep_interval_ms),
            shutdown.clone(),
            move || {
                let (db, broker, s) = (db.clone(), broker.clone(), s.clone());
                let notices = notices.clone();
                Box::pin(async move {
                    sweep_once(&db, broker.as_ref(), &s, &notices)
                        .await
                        .map(|_| ())
                })
            },
        )
    };
    let reconcile = {
        let s = sales.clone();
        every(
            "reconcile",
            Duration::from_millis(sales.settings.reconcile_interval_ms),
            shutdown.clone(),
            move || {
                let (db, s) = (db.clone(), s.clone());
                Box::pin(async move { reconcile_once(&db, &s).await })
            },
        )
    };
    let (a, b) = tokio::join!(sweep, reconcile);
    a.and(b)
}

/// Orders by status, sampled at each scrape of `/metrics`.
pub const GAUGES: &[Gauge] = &[Gauge {
    source: "orders",
    sample: orders_boxed,
}];

fn orders_boxed(db: &DatabaseConnection) -> BoxFuture<'_, anyhow::Result<()>> {
    Box::pin(async move {
        let counts = store::orders_by_status(db).await?;
        for status in [
            super::OrderStatus::Unpaid,
            super::OrderStatus::Paid,
            super::OrderStatus::Canceled,
        ] {
            let n = counts
                .iter()
                .find(|(s, _)| *s == status)
                .map_or(0, |(_, n)| *n);
            metrics::gauge!("conveyor_flash_sale_orders", "status" => status.as_str())
                .set(n as f64);
        }
        Ok(())
    })
}
