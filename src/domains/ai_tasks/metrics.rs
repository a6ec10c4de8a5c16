//! The task flow's metrics: counters recorded after the transaction that caused them
//! committed (a rolled-back transition counts nothing), and the gauges sampled at each
//! scrape of `/metrics`.

use futures::future::BoxFuture;
use sea_orm::{
    ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
};

use super::kinds::Status;
use super::entity::task::{self, Model as Task};
use crate::telemetry::gauges::{Gauge, age_secs};

/// A task reached SUCCESS, FAILED or CANCELED: counts it, its submit-to-end time, and
/// the credits its end consumed (success) or refunded (failure, cancel in full).
pub fn finished(t: &Task) {
    ended(
        t,
        if t.status == Status::Success {
            0
        } else {
            t.cost
        },
    );
}

/// [`finished`] with the part of its cost refunded given (a cancel refunds by policy).
pub fn ended(t: &Task, refunded: i64) {
    // Static labels (the stored strings are always known names): no allocation per task.
    let (kind, status) = (t.kind.as_str(), t.status.as_str());
    metrics::counter!("conveyor_tasks_finished_total", "kind" => kind, "status" => status)
        .increment(1);
    let end = t.finished_at.unwrap_or(t.updated_at);
    let secs = (end - t.created_at).num_milliseconds().max(0) as f64 / 1000.0;
    metrics::histogram!("conveyor_task_seconds", "kind" => kind, "status" => status).record(secs);
    credits("refunded", refunded);
    credits("consumed", t.cost - refunded);
}

/// A task's first claim: its wait from submission, by lane and plan (bounded labels:
/// the lanes are queues, the plans configured; never tenant ids).
pub fn started(t: &Task) {
    let Some(start) = t.started_at else { return };
    let secs = (start - t.created_at).num_milliseconds().max(0) as f64 / 1000.0;
    metrics::histogram!(
        "conveyor_task_queue_wait_seconds",
        "lane" => t.lane.clone(),
        "plan" => t.plan.clone()
    )
    .record(secs);
}

/// Credits reserved at submission, consumed on success or refunded.
pub fn credits(effect: &'static str, amount: i64) {
    if amount > 0 {
        metrics::counter!("conveyor_credits_total", "effect" => effect).increment(amount as u64);
    }
}

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
    waiting(super::parked::census::census(db).await?);
    Ok(())
}

/// The waits by provider; a provider that had some and has none now reads 0 (a gauge
/// keeps its last value otherwise).
fn waiting(census: Vec<super::parked::census::Census>) {
    static SEEN: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    static SEEDED: std::sync::Once = std::sync::Once::new();
    // Approvals read 0 from the first sample (the parked-overdue alert rule has a series
    // before anything ever waited).
    SEEDED.call_once(|| seen.push((super::entity::wait::APPROVAL.into(), String::new())));
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
