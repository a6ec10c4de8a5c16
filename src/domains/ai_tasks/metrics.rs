//! The task flow's metrics, recorded after the transaction that caused them committed
//! (a rolled-back transition counts nothing).

use super::store::Task;
use super::{Status, TaskKind};

/// A task reached SUCCESS, FAILED or CANCELED: counts it, its submit-to-end time, and
/// the credits its end consumed or refunded.
pub fn finished(t: &Task) {
    // Static labels (the stored strings are always known names): no allocation per task.
    let kind = TaskKind::parse(&t.kind).map_or("unknown", TaskKind::as_str);
    let status = Status::parse(&t.status).map_or("unknown", Status::as_str);
    metrics::counter!("conveyor_tasks_finished_total", "kind" => kind, "status" => status)
        .increment(1);
    let end = t.finished_at.unwrap_or(t.updated_at);
    let secs = (end - t.created_at).num_milliseconds().max(0) as f64 / 1000.0;
    metrics::histogram!("conveyor_task_seconds", "kind" => kind, "status" => status).record(secs);
    let effect = if status == Status::Success.as_str() {
        "consumed"
    } else {
        "refunded"
    };
    credits(effect, t.cost);
}

/// Credits reserved at submission, consumed on success or refunded.
pub fn credits(effect: &'static str, amount: i64) {
    if amount > 0 {
        metrics::counter!("conveyor_credits_total", "effect" => effect).increment(amount as u64);
    }
}
