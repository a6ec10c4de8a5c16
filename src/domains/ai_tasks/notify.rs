//! Tasks' final states as events (`task.succeeded`, `task.failed`, `task.canceled`),
//! recorded through the event seam in the transaction of the transition: every way a
//! task ends passes through [`store::apply`](super::store::apply) or the step commit,
//! and both call [`ended`] (or [`events`]). A task's view is built only for a tenant a
//! listener wants it for (an endpoint subscribed to it): asking is the whole cost for
//! everyone else.

use sea_orm::{ConnectionTrait, DbErr};

use super::entity::task::Model as Task;
use super::events::{CANCELED, FAILED, SUCCEEDED};
use super::kinds::Status;
use super::view::TaskView;
use crate::events::{Event, EventType, Events, Interest};

/// The event type of a task in `status`, if it ended.
fn event_type(status: Status) -> Option<&'static EventType> {
    match status {
        Status::Success => Some(&SUCCEEDED),
        Status::Failed => Some(&FAILED),
        Status::Canceled => Some(&CANCELED),
        _ => None,
    }
}

/// What the listeners want of the tenants of those of `tasks` that ended (one query per
/// listener; none when no task ended).
pub async fn interest(
    txn: &impl ConnectionTrait,
    events: &Events,
    tasks: &[&Task],
) -> Result<Interest, DbErr> {
    let ended: Vec<&str> = tasks
        .iter()
        .filter(|t| event_type(t.status).is_some())
        .map(|t| t.user_id.as_str())
        .collect();
    Ok(events.interest(txn, &ended).await?)
}

/// The events of those of `tasks` that ended and that a listener wants.
pub fn events<'a>(interest: &Interest, tasks: impl IntoIterator<Item = &'a Task>) -> Vec<Event> {
    tasks
        .into_iter()
        .filter_map(|t| {
            let kind = event_type(t.status)?;
            interest.wants(&t.user_id, kind).then(|| {
                let data = serde_json::to_value(TaskView::from(t.clone())).unwrap_or_default();
                Event::new(t.user_id.clone(), kind, data)
            })
        })
        .collect()
}

/// Records the events of those of `tasks` that ended.
pub async fn ended(
    txn: &impl ConnectionTrait,
    events: &Events,
    tasks: &[&Task],
) -> Result<(), DbErr> {
    let interest = interest(txn, events, tasks).await?;
    if interest.is_empty() {
        return Ok(());
    }
    let recorded = self::events(&interest, tasks.iter().copied());
    Ok(interest.record(txn, recorded).await?)
}
