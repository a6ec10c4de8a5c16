//! The WebSocket protocol's frames, typed: what a client sends ([`ClientCommand`]) and
//! what the server answers ([`ServerFrame`]; live events are framed once per event, in
//! [`super::Shared`]). The JSON shapes are the wire format (docs/api/live.md).

use axum::extract::ws::Message;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::TASK_STREAM;

/// What a client asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientCommand {
    /// Follow one thing: its snapshot (or the stored events after `after_seq`), then
    /// its live events.
    Subscribe {
        stream: String,
        id: String,
        after_seq: Option<i64>,
    },
    /// Live events of everything the caller owns.
    SubscribeAll,
    Unsubscribe {
        stream: String,
        id: String,
    },
    UnsubscribeAll,
}

/// The frame as sent: `{"op":"subscribe"|"unsubscribe", "stream", "id"}`, `"task_id"` for
/// `"stream":"task","id":…`, or `"all":true`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    op: String,
    stream: Option<String>,
    id: Option<String>,
    task_id: Option<String>,
    after_seq: Option<i64>,
    all: Option<bool>,
}

/// What a malformed command is told.
pub const USAGE: &str = "expected {\"op\":\"subscribe\"|\"unsubscribe\",\"stream\":…,\"id\":…} or {\"op\":\"subscribe\",\"all\":true}";

impl ClientCommand {
    /// A client's text frame, or why it is not a command.
    pub fn parse(text: &str) -> Result<Self, String> {
        let w: Wire = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let target = match (w.stream, w.id, w.task_id) {
            (None, None, Some(id)) => Some((TASK_STREAM.to_owned(), id)),
            (Some(stream), Some(id), None) => Some((stream, id)),
            (None, None, None) => None,
            _ => return Err(USAGE.into()),
        };
        match (w.op.as_str(), target, w.all) {
            ("subscribe", None, Some(true)) => Ok(ClientCommand::SubscribeAll),
            ("subscribe", Some((stream, id)), _) => Ok(ClientCommand::Subscribe {
                stream,
                id,
                after_seq: w.after_seq,
            }),
            ("unsubscribe", Some((stream, id)), _) => Ok(ClientCommand::Unsubscribe { stream, id }),
            ("unsubscribe", None, Some(true)) => Ok(ClientCommand::UnsubscribeAll),
            _ => Err(USAGE.into()),
        }
    }
}

/// The thing a frame is about.
#[derive(Debug, Clone, Copy)]
pub struct About<'a> {
    pub stream: &'a str,
    pub id: &'a str,
}

/// What the server sends besides events.
#[derive(Debug, Clone)]
pub enum ServerFrame<'a> {
    /// `{"type":"subscribed","all":true}`.
    SubscribedAll,
    /// `{"type":"snapshot","seq", "<stream>": view}` about a thing.
    Snapshot {
        about: About<'a>,
        seq: i64,
        view: Value,
    },
    /// `{"type":"unsubscribed","reason"}` about a thing (`terminal`, `requested`).
    Unsubscribed {
        about: About<'a>,
        reason: &'static str,
    },
    /// `{"type":"unsubscribed","all":true,"reason":"requested"}`.
    UnsubscribedAll,
    /// `{"type":"error","code","message"}`, about a thing when it concerns one.
    Error {
        code: &'static str,
        message: String,
        about: Option<About<'a>>,
    },
}

impl ServerFrame<'_> {
    /// The frame's JSON. A frame about one thing also carries `stream`, `id` and
    /// `<stream>_id` (e.g. `task_id`).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        let about = match self {
            ServerFrame::SubscribedAll => {
                m.insert("type".into(), "subscribed".into());
                m.insert("all".into(), true.into());
                None
            }
            ServerFrame::Snapshot { about, seq, view } => {
                m.insert("type".into(), "snapshot".into());
                m.insert("seq".into(), (*seq).into());
                m.insert(about.stream.to_owned(), view.clone());
                Some(about)
            }
            ServerFrame::Unsubscribed { about, reason } => {
                m.insert("type".into(), "unsubscribed".into());
                m.insert("reason".into(), (*reason).into());
                Some(about)
            }
            ServerFrame::UnsubscribedAll => {
                m.insert("type".into(), "unsubscribed".into());
                m.insert("all".into(), true.into());
                m.insert("reason".into(), "requested".into());
                None
            }
            ServerFrame::Error {
                code,
                message,
                about,
            } => {
                m.insert("type".into(), "error".into());
                m.insert("code".into(), (*code).into());
                m.insert("message".into(), message.clone().into());
                about.as_ref()
            }
        };
        if let Some(a) = about {
            m.insert("stream".into(), a.stream.into());
            m.insert("id".into(), a.id.into());
            m.insert(format!("{}_id", a.stream), a.id.into());
        }
        Value::Object(m)
    }

    pub fn message(&self) -> Message {
        Message::Text(self.to_json().to_string().into())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn commands_parse_and_refuse_with_their_usage() {
        assert_eq!(
            ClientCommand::parse(r#"{"op":"subscribe","task_id":"t1","after_seq":7}"#),
            Ok(ClientCommand::Subscribe {
                stream: "task".into(),
                id: "t1".into(),
                after_seq: Some(7)
            })
        );
        assert_eq!(
            ClientCommand::parse(r#"{"op":"unsubscribe","all":true}"#),
            Ok(ClientCommand::UnsubscribeAll)
        );
        for bad in [
            r#"{"op":"subscribe"}"#,
            r#"{"op":"subscribe","stream":"task"}"#,
            r#"{"op":"subscribe","stream":"task","id":"a","task_id":"b"}"#,
            r#"{"op":"jump","all":true}"#,
        ] {
            assert_eq!(ClientCommand::parse(bad), Err(USAGE.to_owned()), "{bad}");
        }
        assert!(ClientCommand::parse(r#"{"op":"subscribe","x":1}"#).is_err());
    }

    #[test]
    fn frames_about_a_thing_name_it_three_ways() {
        let about = About {
            stream: "order",
            id: "o1",
        };
        let snapshot = ServerFrame::Snapshot {
            about,
            seq: 3,
            view: json!({"status": "UNPAID"}),
        };
        assert_eq!(
            snapshot.to_json(),
            json!({"type": "snapshot", "seq": 3, "order": {"status": "UNPAID"},
                   "stream": "order", "id": "o1", "order_id": "o1"})
        );
        assert_eq!(
            ServerFrame::UnsubscribedAll.to_json(),
            json!({"type": "unsubscribed", "all": true, "reason": "requested"})
        );
    }
}
