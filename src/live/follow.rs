//! [`Follow`]: one subscriber following one thing, the rule both WebSocket and SSE keep:
//! first the snapshot (or, resuming after sequence number n, exactly the stored events
//! after n), then live events, with no gap and no duplicate. The caller attaches to the
//! hub *before* [`Follow::start`] reads the store, so nothing falls in between; live
//! events at or below the last sequence number delivered are dropped by
//! [`Follow::accept`]; a subscriber that fell behind the fan-out re-reads the store with
//! [`Follow::missed`].

use std::sync::Arc;

use sea_orm::{DatabaseConnection, DbErr};

use super::{Event, Snapshot, Source};
use crate::users::User;

pub struct Follow {
    pub stream: &'static str,
    pub id: String,
    pub owner: String,
    /// The last sequence number delivered.
    pub last: i64,
    source: Arc<dyn Source>,
}

/// What a new subscriber gets first.
pub enum Opening {
    Snapshot(Snapshot),
    /// Resuming: the stored events after the given sequence number.
    Events(Vec<Event>),
}

#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    /// No such thing, or not the viewer's (the same answer: it does not exist for them).
    #[error("not found")]
    NotFound,
    #[error(transparent)]
    Store(#[from] DbErr),
}

impl Follow {
    /// Reads what to send first. Returns the follow, the opening, and whether the thing
    /// is over already (then nothing more will come, and the caller stops following).
    pub async fn start(
        source: Arc<dyn Source>,
        db: &DatabaseConnection,
        viewer: &User,
        id: &str,
        after: Option<i64>,
    ) -> Result<(Follow, Opening, bool), FollowError> {
        let snapshot = match source.snapshot(db, id).await? {
            Some(s) if viewer.can_see(&s.owner) => s,
            _ => return Err(FollowError::NotFound),
        };
        let mut follow = Follow {
            stream: source.kind(),
            id: id.to_owned(),
            owner: snapshot.owner.clone(),
            last: snapshot.seq,
            source,
        };
        let (terminal, latest) = (snapshot.terminal, snapshot.seq);
        let opening = match after {
            Some(after) => {
                follow.last = after;
                let events = follow.missed(db).await?;
                if let Some(e) = events.last() {
                    follow.last = follow.last.max(e.seq);
                }
                Opening::Events(events)
            }
            None => Opening::Snapshot(snapshot),
        };
        let over = terminal && follow.last >= latest;
        Ok((follow, opening, over))
    }

    /// Follows a thing seen first in a live event (a connection that asked for all of
    /// its owner's events), from that event on.
    pub fn from_event(source: Arc<dyn Source>, ev: &Event) -> Follow {
        Follow {
            stream: source.kind(),
            id: ev.id.clone(),
            owner: ev.owner.clone(),
            last: ev.seq,
            source,
        }
    }

    /// Whether a live event is this follow's next one; if so it becomes the last.
    pub fn accept(&mut self, ev: &Event) -> bool {
        // A computed event carries the latest stored sequence number: it is next only at
        // exactly that one (never moving the follow past a stored event).
        let in_order = if ev.transient {
            ev.seq == self.last
        } else {
            ev.seq > self.last
        };
        let next = in_order && ev.id == self.id && ev.stream == self.stream;
        if next {
            self.last = ev.seq;
        }
        next
    }

    /// The stored events after the last one delivered, for a subscriber that fell
    /// behind the fan-out; pass each through [`Follow::accept`] as it is delivered.
    pub async fn missed(&self, db: &DatabaseConnection) -> Result<Vec<Event>, DbErr> {
        self.source
            .events_after(db, &self.id, &self.owner, self.last)
            .await
    }
}
