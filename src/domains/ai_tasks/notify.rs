//! Tasks' final states as webhook events (`task.succeeded`, `task.failed`,
//! `task.canceled`), recorded in the transaction of the transition: every way a task
//! ends passes through [`store::apply`](super::store::apply) or the step commit, and both
//! call [`ended`].

use sea_orm::{ConnectionTrait, DbErr};

use super::kinds::Status;
use super::store::Task;
use super::view::TaskView;
use crate::domains::webhooks::emit::{self, Event};

fn event_of(t: &Task) -> Option<Event> {
    let event_type = match t.status {
        Status::Success => "task.succeeded",
        Status::Failed => "task.failed",
        Status::Canceled => "task.canceled",
        _ => return None,
    };
    Some(Event {
        user_id: t.user_id.clone(),
        event_type,
        data: serde_json::to_value(TaskView::from(t.clone())).unwrap_or_default(),
    })
}

/// The webhook events of those of `tasks` that ended.
pub fn events<'a>(tasks: impl IntoIterator<Item = &'a Task>) -> Vec<Event> {
    tasks.into_iter().filter_map(event_of).collect()
}

/// Records the webhook events of those of `tasks` that ended.
pub async fn ended<'a>(
    txn: &impl ConnectionTrait,
    tasks: impl IntoIterator<Item = &'a Task>,
) -> Result<(), DbErr> {
    emit::record_many(txn, &events(tasks)).await
}
