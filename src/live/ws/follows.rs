//! What one connection follows: live events offered and framed, client commands,
//! subscriptions opened with their snapshot or the stored events after a sequence number.

use std::sync::Arc;

use axum::extract::ws::Message;

use super::Connection;
use crate::live::Shared;
use crate::live::follow::{Follow, FollowError, Opening};
use crate::live::frames::{About, ClientCommand, ServerFrame};

impl Connection {
    /// Keeps a live event if this connection wants it (latest per thing wins).
    pub(super) fn offer(&mut self, shared: Arc<Shared>) {
        let ev = &shared.event;
        let wanted = match self.subs.get(&ev.id) {
            Some(f) if ev.transient => ev.seq == f.last && ev.stream == f.stream,
            Some(f) => ev.seq > f.last && ev.stream == f.stream,
            // A computed event only for an explicit follow: under `all`, one computed
            // before the thing ended could arrive after its end.
            None => !ev.transient && self.all && ev.owner == self.user.id,
        };
        if wanted {
            self.pending.insert(shared);
        }
    }

    /// The fan-out ran ahead of this connection: re-read what every followed thing
    /// stored since its last event (coalesced as live events are, so pieces of streamed
    /// text all arrive and progress comes as its latest).
    pub(super) async fn resync(&mut self) {
        for f in self.subs.values() {
            if let Ok(evs) = f.missed(&self.state.core.db).await {
                for e in evs {
                    self.pending.insert(Shared::new(e));
                }
            }
        }
    }

    /// Appends the frames for one event, updating the subscription it belongs to.
    pub(super) fn frames_for(&mut self, shared: &Shared, frames: &mut Vec<Message>) {
        let ev = &shared.event;
        match self.subs.get_mut(&ev.id) {
            Some(f) => {
                if !f.accept(ev) {
                    return;
                }
            }
            // A thing seen through the `all` subscription: followed from now on, within
            // the subscription limit.
            // A computed event never starts a follow (its thing may have ended since).
            None if ev.transient => return,
            None => {
                if !ev.terminal
                    && self.subs.len() < self.state.settings.max_subscriptions
                    && let Some(source) = self.state.sources.get(&ev.stream)
                {
                    self.subs
                        .insert(ev.id.clone(), Follow::from_event(source.clone(), ev));
                    // Under `all` the owner's route brings its events already; a tap by
                    // id too would make every event of it cost two routes.
                    if !(self.all && ev.owner == self.user.id) {
                        self.taps.follow(&ev.id);
                    }
                }
            }
        }
        frames.push(Message::Text(shared.frame.clone()));
        if ev.terminal {
            self.subs.remove(&ev.id);
            self.taps.unfollow(&ev.id);
            let about = About {
                stream: &ev.stream,
                id: &ev.id,
            };
            frames.push(
                ServerFrame::Unsubscribed {
                    about,
                    reason: "terminal",
                }
                .message(),
            );
        }
    }

    pub(super) async fn command(&mut self, text: &str) -> Vec<Message> {
        let command = match ClientCommand::parse(text) {
            Ok(c) => c,
            Err(why) => return vec![error_frame("invalid_command", why, None)],
        };
        match command {
            ClientCommand::SubscribeAll => {
                self.all = true;
                self.taps.follow_owner(&self.user.id);
                vec![ServerFrame::SubscribedAll.message()]
            }
            ClientCommand::Subscribe {
                stream,
                id,
                after_seq,
            } => self.subscribe(stream, id, after_seq).await,
            ClientCommand::Unsubscribe { stream, id } => {
                self.subs.remove(&id);
                self.taps.unfollow(&id);
                self.pending.remove(&id);
                let about = About {
                    stream: &stream,
                    id: &id,
                };
                vec![
                    ServerFrame::Unsubscribed {
                        about,
                        reason: "requested",
                    }
                    .message(),
                ]
            }
            ClientCommand::UnsubscribeAll => {
                self.all = false;
                // What `all` started following stays followed: tapped by id before the
                // owner's route closes, so nothing falls in between.
                for id in self.subs.keys() {
                    self.taps.follow(id);
                }
                self.taps.unfollow_owner(&self.user.id);
                vec![ServerFrame::UnsubscribedAll.message()]
            }
        }
    }

    async fn subscribe(
        &mut self,
        stream: String,
        id: String,
        after_seq: Option<i64>,
    ) -> Vec<Message> {
        let of = Some(About {
            stream: &stream,
            id: &id,
        });
        if !self.subs.contains_key(&id) && self.subs.len() >= self.state.settings.max_subscriptions
        {
            return vec![error_frame(
                "too_many_subscriptions",
                "unsubscribe from something first".into(),
                of,
            )];
        }
        let Some(source) = self.state.sources.get(&stream).cloned() else {
            let kinds = self.state.sources.kinds().join(", ");
            return vec![error_frame(
                "unknown_stream",
                format!("streams: {kinds}"),
                of,
            )];
        };
        let db = self.state.core.db.clone();
        // Routed here before the store is read: nothing falls in between.
        self.taps.follow(&id);
        let started = Follow::start(source, &db, &self.user, &id, after_seq).await;
        let (follow, opening, over) = match started {
            Ok(started) => started,
            Err(e) => {
                if !self.subs.contains_key(&id) {
                    self.taps.unfollow(&id);
                }
                return match e {
                    FollowError::NotFound => {
                        vec![error_frame("not_found", format!("{stream} not found"), of)]
                    }
                    FollowError::Store(e) => {
                        tracing::warn!(error = %e, "subscription lookup failed");
                        vec![error_frame("unavailable", "try again".into(), of)]
                    }
                };
            }
        };
        let mut frames = Vec::new();
        match opening {
            Opening::Snapshot(s) => {
                let about = About {
                    stream: &stream,
                    id: &id,
                };
                let view = s.view;
                frames.push(
                    ServerFrame::Snapshot {
                        about,
                        seq: s.seq,
                        view,
                    }
                    .message(),
                );
            }
            Opening::Events(evs) => {
                frames.extend(
                    evs.iter()
                        .map(|e| Message::Text(e.frame_json().to_string().into())),
                );
            }
        }
        // Events that arrived while the store was read are at or below the follow's
        // last sequence number: dropped.
        self.pending.remove(&id);
        if over {
            if !self.subs.contains_key(&id) {
                self.taps.unfollow(&id);
            }
            let about = About {
                stream: &stream,
                id: &id,
            };
            frames.push(
                ServerFrame::Unsubscribed {
                    about,
                    reason: "terminal",
                }
                .message(),
            );
        } else {
            self.subs.insert(id, follow);
        }
        frames
    }
}

pub(super) fn error_frame(
    code: &'static str,
    message: String,
    about: Option<About<'_>>,
) -> Message {
    ServerFrame::Error {
        code,
        message,
        about,
    }
    .message()
}
