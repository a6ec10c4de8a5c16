//! [`Event`]: one event of a live stream, the same for every stream kind, as published on
//! the broker's events exchange and pushed to WebSocket and SSE subscribers.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::broker::Broker;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Event {
    /// The stream kind (`task`, `order`): which [`super::Source`] it belongs to.
    pub stream: String,
    /// The followed thing's id.
    pub id: String,
    /// Its owner: only they (and admins) receive it.
    pub owner: String,
    /// Per-thing sequence number, one more for every stored event.
    pub seq: i64,
    /// The thing reached an end state: subscriptions to it close after this event.
    pub terminal: bool,
    /// Never coalesced away by a newer event of the same thing (a piece of streamed
    /// text: every one of them is needed, in order); progress-like events are not.
    pub keep: bool,
    /// Computed between stored events (a waiting task's place in line), never stored:
    /// it carries the thing's latest sequence number, and a follower shows it without
    /// moving its place in the sequence (a resume re-reads nothing for it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub transient: bool,
    /// The trace of the work that made it (traces on): its push is a span of that trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The kind's own fields (a task: `task_id`, `status`, `progress`, `step`, …),
    /// copied into the pushed frame as they are.
    pub data: Map<String, Value>,
}

impl Event {
    /// An event of `stream`'s thing `id`, seen by `owner`, with the kind's fields
    /// (`data`: a JSON object; anything else carries none). It neither ends its thing nor
    /// is kept from coalescing, is stored, and carries no trace until a setter says so.
    pub fn new(
        stream: impl Into<String>,
        id: impl Into<String>,
        owner: impl Into<String>,
        seq: i64,
        data: impl Into<Value>,
    ) -> Self {
        Event {
            stream: stream.into(),
            id: id.into(),
            owner: owner.into(),
            seq,
            terminal: false,
            keep: false,
            transient: false,
            traceparent: None,
            data: match data.into() {
                Value::Object(fields) => fields,
                _ => Map::new(),
            },
        }
    }

    /// Its thing reached an end state (when `terminal`).
    pub fn terminal(mut self, terminal: bool) -> Self {
        self.terminal = terminal;
        self
    }

    /// Never coalesced away (when `keep`): a piece of streamed text.
    pub fn keep(mut self, keep: bool) -> Self {
        self.keep = keep;
        self
    }

    /// Computed between stored events (a waiting task's place in line), never stored.
    pub fn transient(mut self) -> Self {
        self.transient = true;
        self
    }

    /// In the trace `traceparent` (when there is one).
    pub fn traced(mut self, traceparent: Option<String>) -> Self {
        self.traceparent = traceparent;
        self
    }

    /// The pushed JSON: the kind's fields plus `type`, `stream`, `id` and `seq`.
    pub fn frame_json(&self) -> Value {
        let mut m = self.data.clone();
        m.insert("type".into(), "event".into());
        m.insert("stream".into(), self.stream.clone().into());
        m.insert("id".into(), self.id.clone().into());
        m.insert("seq".into(), self.seq.into());
        if self.transient {
            m.insert("transient".into(), true.into());
        }
        Value::Object(m)
    }
}

/// An event with its WebSocket frame, serialized once for every connection.
#[derive(Debug)]
pub struct Shared {
    pub event: Event,
    pub frame: axum::extract::ws::Utf8Bytes,
}

impl Shared {
    pub fn new(event: Event) -> Arc<Self> {
        let frame = event.frame_json().to_string().into();
        Arc::new(Shared { event, frame })
    }
}

/// Publishes events to every API instance. Several travel as one message (a JSON array):
/// the broker's cost is per message. Best effort: events are also stored, and a
/// subscriber that missed one re-reads it from its [`super::Source`].
pub async fn publish(broker: &dyn Broker, events: &[Event]) {
    // Events sent in a trace (a step's progress, a request's change) carry it, so each
    // instance's push joins that trace.
    let traced: Vec<Event>;
    let events = match crate::traces::current() {
        Some(tp) if events.iter().any(|e| e.traceparent.is_none()) => {
            traced = events
                .iter()
                .map(|e| Event {
                    traceparent: e.traceparent.clone().or_else(|| Some(tp.clone())),
                    ..e.clone()
                })
                .collect();
            &traced[..]
        }
        _ => events,
    };
    let body = match events {
        [] => return,
        [one] => serde_json::to_vec(one),
        many => serde_json::to_vec(many),
    };
    let Ok(body) = body else { return };
    if let Err(e) = broker.publish_events(EVENTS.name, vec![body]).await {
        tracing::debug!(error = %e, "live events not published (they are stored)");
    }
}

/// The topic live events travel on: one event, or a batch, per message.
pub const EVENTS: crate::bus::Topic<Body> = crate::bus::Topic::new("events", 4096);

/// An events message: one event, or a batch.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum Body {
    Many(Vec<Event>),
    One(Event),
}
