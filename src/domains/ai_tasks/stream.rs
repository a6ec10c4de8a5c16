//! The `task` live stream: what WebSocket and SSE subscribers of a task see.

use async_trait::async_trait;
use sea_orm::{DatabaseConnection, DbErr};

use super::messages::TaskEvent;
use super::store;
use super::view::TaskView;
use crate::live::{Event, Snapshot, Source};

pub use super::messages::STREAM as KIND;

pub struct TaskStream;

#[async_trait]
impl Source for TaskStream {
    fn kind(&self) -> &'static str {
        KIND
    }

    async fn snapshot(&self, db: &DatabaseConnection, id: &str) -> Result<Option<Snapshot>, DbErr> {
        Ok(store::get(db, id).await?.map(|t| Snapshot {
            owner: t.user_id.clone(),
            seq: i64::from(t.seq),
            terminal: t.status.is_terminal(),
            view: serde_json::to_value(TaskView::from(t)).unwrap_or_default(),
        }))
    }

    async fn events_after(
        &self,
        db: &DatabaseConnection,
        id: &str,
        owner: &str,
        after: i64,
    ) -> Result<Vec<Event>, DbErr> {
        // Sequence numbers are stored as 32-bit; anything above that is "after all".
        let after = i32::try_from(after).unwrap_or(i32::MAX);
        Ok(store::events_after(db, id, after)
            .await?
            .iter()
            .map(|e| TaskEvent::from_stored(e, owner).live())
            .collect())
    }
}
