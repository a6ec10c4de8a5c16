//! The task flow's gauges, sampled at each scrape of `/metrics`: the tasks not finished
//! yet by status (with the oldest one's age), and what waits by provider (parked jobs
//! and approvals, with the oldest one's age and how many are overdue). The counters are
//! [`metrics`](super::metrics).

use futures::future::BoxFuture;
use sea_orm::{
    ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
};

use super::entity::task;
use super::entity::wait::APPROVAL;
use super::kinds::Status;
use super::parked::census::{Census, census};
use crate::telemetry::gauges::{Gauge, age_secs};

/// The flow's gauges, for the domain registry.
pub const GAUGES: &[Gauge] = &[Gauge {
    source: "tasks",
    sample: active_tasks_boxed,
}];

fn active_tasks_boxed(db: &DatabaseConnection) -> BoxFuture<'_, anyhow::Result<()>> {
    Box::pin(active_tasks(db))
}

/// Tasks not yet finished, by status, and how long the oldest has waited (terminal
/// ones only grow; counting them would scan the table).
async fn active_tasks(db: &DatabaseConnection) -> anyhow::Result<()> {
    for status in Status::ACTIVE {
        let of_status = task::Entity::find().filter(task::Column::Status.eq(status));
        let n = of_status.clone().count(db).await?;
        let oldest = of_status
            .order_by_asc(task::Column::CreatedAt)
            .one(db)
            .await?
            .map_or(0.0, |t| age_secs(t.created_at));
        metrics::gauge!("conveyor_tasks_active", "status" => status.as_str()).set(n as f64);
        metrics::gauge!("conveyor_tasks_oldest_active_seconds", "status" => status.as_str())
            .set(oldest);
    }
    waiting(census(db).await?);
    Ok(())
}

/// The waits by provider; a provider that had some and has none now reads 0 (a gauge
/// keeps its last value otherwise).
fn waiting(census: Vec<Census>) {
    static SEEN: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    static SEEDED: std::sync::Once = std::sync::Once::new();
    // Approvals read 0 from the first sample (the parked-overdue alert rule has a series
    // before anything ever waited).
    SEEDED.call_once(|| seen.push((APPROVAL.into(), String::new())));
    for (waiting_for, provider) in seen.iter() {
        if !census
            .iter()
            .any(|c| c.waiting_for == *waiting_for && c.provider == *provider)
        {
            let labels = [
                ("waiting_for", waiting_for.clone()),
                ("provider", provider.clone()),
            ];
            metrics::gauge!("conveyor_ai_waiting", &labels).set(0.0);
            metrics::gauge!("conveyor_ai_waiting_oldest_seconds", &labels).set(0.0);
            metrics::gauge!("conveyor_ai_waiting_overdue", &labels).set(0.0);
        }
    }
    seen.clear();
    for c in census {
        let labels = [
            ("waiting_for", c.waiting_for.clone()),
            ("provider", c.provider.clone()),
        ];
        metrics::gauge!("conveyor_ai_waiting", &labels).set(c.count as f64);
        metrics::gauge!("conveyor_ai_waiting_oldest_seconds", &labels).set(age_secs(c.oldest));
        metrics::gauge!("conveyor_ai_waiting_overdue", &labels).set(c.overdue as f64);
        seen.push((c.waiting_for, c.provider));
    }
}
