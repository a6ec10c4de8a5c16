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
        let Some(t) = store::get(db, id).await? else {
            return Ok(None);
        };
        let line = super::scheduling::line::place(db, &t).await?;
        let (owner, seq, terminal) = (t.user_id.clone(), i64::from(t.seq), t.status.is_terminal());
        let mut view = TaskView::from(t);
        view.line = line;
        Ok(Some(Snapshot {
            owner,
            seq,
            terminal,
            view: serde_json::to_value(view).unwrap_or_default(),
        }))
    }

    /// The waiting tasks among `ids`: their place in line, as a transient event.
    async fn between(&self, db: &DatabaseConnection, ids: &[String]) -> Result<Vec<Event>, DbErr> {
        let mut events = Vec::new();
        let mut paces = super::scheduling::line::Paces::default();
        for t in super::scheduling::line::waiting_among(db, ids).await? {
            let Some(line) = super::scheduling::line::place_with(db, &t, &mut paces).await? else {
                continue;
            };
            let data = serde_json::json!({
                "task_id": t.id,
                "status": t.status,
                "progress": t.progress,
                "line": line,
            });
            events.push(Event::new(KIND, &t.id, &t.user_id, i64::from(t.seq), data).transient());
        }
        Ok(events)
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
