//! Tasks' final states as webhook events (`task.succeeded`, `task.failed`,
//! `task.canceled`), recorded in the transaction of the transition: every way a task
//! ends passes through [`store::apply`](super::store::apply) or the step commit, and both
//! call [`ended`]. A task's view is built only for a tenant with an endpoint that wants
//! the event: the lookup of endpoints is the whole cost for everyone else.

use sea_orm::{ConnectionTrait, DbErr};

use super::kinds::Status;
use super::store::Task;
use super::view::TaskView;
use crate::domains::webhooks::emit::{self, Event, Listeners};

/// The event type of a task in `status`, if it ended.
fn event_type(status: Status) -> Option<&'static str> {
    match status {
        Status::Success => Some("task.succeeded"),
        Status::Failed => Some("task.failed"),
        Status::Canceled => Some("task.canceled"),
        _ => None,
    }
}

/// The tenants' endpoints of those of `tasks` that ended (one query; none when no task
/// ended).
pub async fn listeners(txn: &impl ConnectionTrait, tasks: &[&Task]) -> Result<Listeners, DbErr> {
    let ended: Vec<&str> = tasks
        .iter()
        .filter(|t| event_type(t.status).is_some())
        .map(|t| t.user_id.as_str())
        .collect();
    emit::listeners(txn, ended).await
}

/// The events of those of `tasks` that ended and that `listeners` want.
pub fn events<'a>(listeners: &Listeners, tasks: impl IntoIterator<Item = &'a Task>) -> Vec<Event> {
    tasks
        .into_iter()
        .filter_map(|t| {
            let event_type = event_type(t.status)?;
            listeners.wants(&t.user_id, event_type).then(|| Event {
                user_id: t.user_id.clone(),
                event_type,
                data: serde_json::to_value(TaskView::from(t.clone())).unwrap_or_default(),
            })
        })
        .collect()
}

/// Records the webhook events of those of `tasks` that ended.
pub async fn ended(txn: &impl ConnectionTrait, tasks: &[&Task]) -> Result<(), DbErr> {
    let listeners = listeners(txn, tasks).await?;
    if listeners.is_empty() {
        return Ok(());
    }
    emit::record_for(txn, &listeners, &events(&listeners, tasks.iter().copied())).await
}
