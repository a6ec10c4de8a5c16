//! The sweep: the waits are the truth, the check messages only their reminders. A wait
//! whose next check is overdue by more than [`GRACE`] lost its message (a purged queue,
//! a broker replaced, a publish that failed): it is sent again, and the wait's
//! `check_at` moved on so the next pass does not send it twice. After a broker outage
//! every parked job is checked within a pass or two of the broker's return. An
//! approval's only check is its timeout, sent by the sweep when its deadline passes.

use std::time::Duration;

use chrono::Utc;
use sea_orm::DatabaseConnection;

use super::store::{self as waits, check_message};
use crate::broker::{Broker, Target};
use crate::domains::ai_tasks::queues::{AI_CHECK, check_delay};

/// How late a check may be before the sweep sends another: a delay queue delivers on
/// time to the second, and a busy check queue may hold one a while.
pub const GRACE: Duration = Duration::from_secs(15);

/// Waits one pass handles.
const PASS: u64 = 500;

/// One pass: re-sends the overdue checks; how many.
pub async fn sweep_once(db: &DatabaseConnection, broker: &dyn Broker) -> anyhow::Result<usize> {
    let now = Utc::now();
    let before = now - chrono::Duration::from_std(GRACE)?;
    let mut sent = 0;
    for w in waits::overdue(db, before, now, PASS).await? {
        // Until the check it sends comes, the wait is due again after a full period.
        let period = broker.topology().delay(check_delay(i32::MAX)).delay;
        let next = now + chrono::Duration::from_std(period)?;
        if !waits::postpone(db, &w, next).await? {
            continue;
        }
        let message = check_message(&w.task_id, w.attempt, w.checks);
        if let Err(e) = broker.publish(Target::Queue(&AI_CHECK), &message).await {
            // Not sent (the broker is away): due again at once, for the next pass.
            waits::postpone(db, &w, w.check_at).await?;
            return Err(e.into());
        }
        sent += 1;
    }
    if sent > 0 {
        metrics::counter!("conveyor_ai_parked_resent_total").increment(sent as u64);
    }
    Ok(sent)
}
