//! The task flow's counters, recorded after the transaction that caused them committed
//! (a rolled-back transition counts nothing). The gauges sampled at each scrape of
//! `/metrics` are [`gauges`](super::gauges).

use super::entity::task::Model as Task;
use super::kinds::Status;

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
