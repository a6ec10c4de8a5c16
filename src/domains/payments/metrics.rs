//! The flow's metrics: the inbox's backlog, sampled at each scrape of `/metrics` (events
//! recorded but not applied, received or refunds waiting for their payment, and the
//! oldest one's age: a growing age means grants are not happening — the alert to page
//! on), what applying did, and every webhook's outcome.

use futures::future::BoxFuture;
use sea_orm::DatabaseConnection;

use super::store::{self, Applied};
use crate::telemetry::gauges::{Gauge, age_secs};

pub const GAUGES: &[Gauge] = &[Gauge {
    source: "payments_inbox",
    sample: inbox,
}];

fn inbox(db: &DatabaseConnection) -> BoxFuture<'_, anyhow::Result<()>> {
    Box::pin(async move {
        let (pending, oldest) = store::backlog(db).await?;
        let age = oldest.map_or(0.0, age_secs);
        metrics::gauge!("conveyor_payments_inbox_pending").set(pending as f64);
        metrics::gauge!("conveyor_payments_inbox_oldest_seconds").set(age);
        // Exported from the first scrape, so an alert on its increase sees the first one.
        metrics::counter!("conveyor_payments_refund_shortfall_credits_total").increment(0);
        Ok(())
    })
}

/// Counts and logs what applying event `id` did.
pub fn applied(id: i64, applied: &Applied) {
    let outcome = |o: &'static str| {
        metrics::counter!("conveyor_payments_applied_total", "outcome" => o).increment(1)
    };
    match applied {
        Applied::Granted {
            user_id,
            credits,
            membership_until,
            order_event,
        } => {
            outcome("granted");
            metrics::counter!("conveyor_credits_total", "effect" => "granted")
                .increment((*credits).max(0) as u64);
            tracing::info!(event = id, user = %user_id, credits, ?membership_until, order = ?order_event.as_ref().map(|e| &e.order_id), "payment applied");
        }
        Applied::RefundDue { order_id } => {
            outcome("refund_due");
            tracing::warn!(event = id, order = %order_id, "payment for an order canceled or paid otherwise: refund due");
        }
        Applied::Refunded {
            user_id,
            credits,
            shortfall,
        } => {
            outcome("refunded");
            metrics::counter!("conveyor_credits_total", "effect" => "taken_back")
                .increment((*credits).max(0) as u64);
            if *shortfall > 0 {
                metrics::counter!("conveyor_payments_refund_shortfall_credits_total")
                    .increment(*shortfall as u64);
                tracing::warn!(event = id, user = %user_id, shortfall, "refund could not take back credits already spent (shortfall recorded)");
            } else {
                tracing::info!(event = id, user = %user_id, credits, "refund applied");
            }
        }
        Applied::Waiting => {
            outcome("waiting");
            tracing::info!(event = id, "refund before its payment: waiting");
        }
        Applied::AlreadyPaid | Applied::NothingLeft | Applied::Before | Applied::NoSuchEvent => {}
    }
}

/// Counts a webhook's outcome (`accepted`, `duplicate`, `mismatch`, a refusal reason…).
pub fn webhook(provider: &'static str, outcome: &'static str) {
    metrics::counter!("conveyor_webhooks_total", "provider" => provider, "outcome" => outcome)
        .increment(1);
}
