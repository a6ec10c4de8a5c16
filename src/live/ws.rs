//! `GET /v1/ws?ticket=…`: the WebSocket progress stream.
//!
//! Client frames (JSON text):
//! `{"op":"subscribe","task_id":"…"}` (snapshot, then live events),
//! `{"op":"subscribe","task_id":"…","after_seq":7}` (the stored events after 7, then live),
//! `{"op":"subscribe","all":true}` (live events of all the caller's tasks),
//! `{"op":"unsubscribe","task_id":"…"}`.
//! Server frames: `{"type":"snapshot","task":{…}}`, `{"type":"event",…}` (task_id, seq,
//! status, progress, step, message, at), `{"type":"unsubscribed","task_id":…,"reason":…}`
//! (a terminal event ends its subscription), `{"type":"error","code":…,"message":…}`.
//!
//! Limits: frame size, subscriptions per connection, ping/idle timeout. Live events wait
//! in a per-connection map that keeps only the latest per task, so a slow reader gets
//! progress coalesced; one that cannot take a frame within `live.send_timeout_ms` is
//! closed. It never slows other connections: each reads the instance's fan-out on its own.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::HeaderMap;
use axum::response::Response;
use futures::{SinkExt as _, StreamExt as _};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::hub::Shared;
use crate::api::openapi::ErrorBody;
use crate::app::AppState;
use crate::domains::ai_tasks::Status;
use crate::domains::ai_tasks::messages::TaskEvent;
use crate::domains::ai_tasks::routes::TaskView;
use crate::domains::ai_tasks::store;
use crate::error::ApiError;
use crate::users::User;

#[derive(Debug, Deserialize)]
pub struct Params {
    ticket: Option<String>,
}

/// Checks Origin and the ticket before upgrading: a refused client never gets a socket.
#[utoipa::path(get, path = "/v1/ws", tag = "live",
    params(("ticket" = String, Query, description = "From `POST /v1/ws-tickets`")),
    responses(
        (status = 101, description = "WebSocket: JSON text frames; see the README's frame tables"),
        (status = 401, description = "Missing, forged, expired or reused ticket", body = ErrorBody),
        (status = 403, description = "`Origin` outside `live.allowed_origins`", body = ErrorBody)))]
pub async fn upgrade(
    State(state): State<AppState>,
    crate::api::ApiQuery(params): crate::api::ApiQuery<Params>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    if let Some(origin) = headers.get(axum::http::header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !state
            .settings
            .live
            .allowed_origins
            .iter()
            .any(|o| o == origin)
        {
            return Err(ApiError::Forbidden);
        }
    }
    let ticket = params.ticket.ok_or(ApiError::Unauthorized)?;
    let user_id = super::tickets::redeem(&state.db, &ticket)
        .await?
        .ok_or(ApiError::Unauthorized)?;
    let user = crate::users::entity::user::Entity::find_by_id(user_id)
        .one(&state.db)
        .await?
        .ok_or(ApiError::Unauthorized)?;
    let live = &state.settings.live;
    let ws = ws
        .max_message_size(live.max_message_bytes)
        .max_frame_size(live.max_message_bytes)
        .read_buffer_size(live.buffer_bytes)
        .write_buffer_size(live.buffer_bytes)
        .max_write_buffer_size(live.buffer_bytes * 16);
    Ok(ws.on_upgrade(move |socket| Connection::new(state, user).run(socket)))
}

use sea_orm::EntityTrait as _;

struct Connection {
    state: AppState,
    user: User,
    /// Subscribed task → last sequence number sent.
    tasks: HashMap<String, i32>,
    all: bool,
    /// Live events not sent yet, latest per task.
    pending: Pending,
}

/// Events waiting to be written, at most one (the latest) per task. A short list: a
/// connection rarely has more than a few tasks in flight, and a scan beats hashing and
/// copying the task id for every event on every connection.
#[derive(Default)]
struct Pending(Vec<Arc<Shared>>);

impl Pending {
    fn insert(&mut self, shared: Arc<Shared>) {
        match self
            .0
            .iter_mut()
            .find(|p| p.event.task_id == shared.event.task_id)
        {
            Some(slot) => *slot = shared,
            None => self.0.push(shared),
        }
    }

    fn remove(&mut self, task_id: &str) {
        self.0.retain(|p| p.event.task_id != task_id);
    }

    fn take(&mut self) -> Vec<Arc<Shared>> {
        std::mem::take(&mut self.0)
    }
}

enum Flow {
    Continue,
    Close(u16, &'static str),
}

impl Connection {
    fn new(state: AppState, user: User) -> Self {
        Connection {
            state,
            user,
            tasks: HashMap::new(),
            all: false,
            pending: Pending::default(),
        }
    }

    async fn run(mut self, socket: WebSocket) {
        let live = self.state.settings.live.clone();
        let send_timeout = Duration::from_millis(live.send_timeout_ms);
        let idle = Duration::from_millis(live.idle_timeout_ms);
        let (mut sink, mut stream) = socket.split();
        let mut events = self.state.hub.subscribe();
        let mut ping = tokio::time::interval(Duration::from_millis(live.ping_interval_ms));
        ping.tick().await;
        let mut heard = Instant::now();
        // One waiter for the whole connection: re-registering on the shared token every
        // turn of the loop costs a lock per event at 10,000 connections.
        let shutdown = self.state.shutdown.clone().cancelled_owned();
        tokio::pin!(shutdown);
        let close = loop {
            // Drain what is pending before waiting again: every frame in one write,
            // under one deadline.
            let pending = self.pending.take();
            if !pending.is_empty() {
                let mut frames = Vec::with_capacity(pending.len());
                for ev in pending {
                    self.frames_for(&ev, &mut frames);
                }
                if !send_all(&mut sink, frames, send_timeout).await {
                    break (1008, "too slow: frames not read in time");
                }
            }
            let flow = tokio::select! {
                _ = &mut shutdown => Flow::Close(1001, "server shutting down"),
                msg = stream.next() => match msg {
                    None | Some(Err(_)) => break (1000, ""),
                    Some(Ok(Message::Close(_))) => break (1000, ""),
                    Some(Ok(Message::Text(text))) => {
                        heard = Instant::now();
                        let replies = self.command(text.as_str()).await;
                        if send_all(&mut sink, replies, send_timeout).await {
                            Flow::Continue
                        } else {
                            Flow::Close(1008, "too slow: frames not read in time")
                        }
                    }
                    Some(Ok(Message::Binary(_))) => {
                        let frame = error_frame("unsupported", "send JSON text frames", None);
                        if send(&mut sink, frame, send_timeout).await { Flow::Continue } else { Flow::Close(1008, "too slow") }
                    }
                    Some(Ok(_)) => {
                        heard = Instant::now();
                        Flow::Continue
                    }
                },
                ev = events.recv() => {
                    match ev {
                        Ok(ev) => self.offer(ev),
                        Err(RecvError::Lagged(_)) => self.resync().await,
                        Err(RecvError::Closed) => return,
                    }
                    Flow::Continue
                }
                _ = ping.tick() => {
                    if heard.elapsed() > idle {
                        Flow::Close(1001, "idle timeout")
                    } else if send(&mut sink, Message::Ping(Default::default()), send_timeout).await {
                        Flow::Continue
                    } else {
                        Flow::Close(1008, "too slow")
                    }
                }
            };
            if let Flow::Close(code, reason) = flow {
                break (code, reason);
            }
        };
        let frame = Message::Close(Some(CloseFrame {
            code: close.0,
            reason: close.1.into(),
        }));
        let _ = tokio::time::timeout(send_timeout, sink.send(frame)).await;
    }

    /// Keeps a live event if this connection wants it (latest per task wins).
    fn offer(&mut self, shared: Arc<Shared>) {
        let ev = &shared.event;
        let last = self.tasks.get(&ev.task_id).copied();
        let wanted = match last {
            Some(seq) => ev.seq > seq,
            None => self.all && ev.user_id == self.user.id,
        };
        if wanted {
            self.pending.insert(shared);
        }
    }

    /// The fan-out ran ahead of this connection: re-read the latest stored event of
    /// every subscribed task instead.
    async fn resync(&mut self) {
        let tasks: Vec<(String, i32)> = self.tasks.iter().map(|(k, v)| (k.clone(), *v)).collect();
        for (task, seq) in tasks {
            if let Ok(evs) = store::events_after(&self.state.db, &task, seq).await
                && let Some(e) = evs.last()
            {
                self.pending
                    .insert(Shared::new(TaskEvent::from_stored(e, &self.user.id)));
            }
        }
    }

    /// Appends the frames for one event, updating the subscription it belongs to.
    fn frames_for(&mut self, shared: &Shared, frames: &mut Vec<Message>) {
        let ev = &shared.event;
        if self
            .tasks
            .get(&ev.task_id)
            .is_some_and(|seq| ev.seq <= *seq)
        {
            return;
        }
        frames.push(Message::Text(shared.frame.clone()));
        let terminal = Status::parse(&ev.status).is_some_and(Status::is_terminal);
        if terminal {
            self.tasks.remove(&ev.task_id);
            frames.push(json_frame(
                json!({ "type": "unsubscribed", "task_id": ev.task_id, "reason": "terminal" }),
            ));
        } else if let Some(seq) = self.tasks.get_mut(&ev.task_id) {
            *seq = ev.seq;
        } else if self.tasks.len() < self.state.settings.live.max_subscriptions {
            self.tasks.insert(ev.task_id.clone(), ev.seq);
        }
    }

    async fn command(&mut self, text: &str) -> Vec<Message> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Command {
            op: String,
            task_id: Option<String>,
            after_seq: Option<i32>,
            all: Option<bool>,
        }
        let cmd: Command = match serde_json::from_str(text) {
            Ok(c) => c,
            Err(e) => return vec![error_frame("invalid_command", &e.to_string(), None)],
        };
        match (cmd.op.as_str(), cmd.task_id, cmd.all) {
            ("subscribe", None, Some(true)) => {
                self.all = true;
                vec![json_frame(json!({ "type": "subscribed", "all": true }))]
            }
            ("subscribe", Some(id), _) => self.subscribe(id, cmd.after_seq).await,
            ("unsubscribe", Some(id), _) => {
                self.tasks.remove(&id);
                self.pending.remove(&id);
                vec![json_frame(
                    json!({ "type": "unsubscribed", "task_id": id, "reason": "requested" }),
                )]
            }
            ("unsubscribe", None, Some(true)) => {
                self.all = false;
                vec![json_frame(
                    json!({ "type": "unsubscribed", "all": true, "reason": "requested" }),
                )]
            }
            _ => vec![error_frame(
                "invalid_command",
                "expected {\"op\":\"subscribe\"|\"unsubscribe\",\"task_id\":…} or {\"op\":\"subscribe\",\"all\":true}",
                None,
            )],
        }
    }

    async fn subscribe(&mut self, id: String, after_seq: Option<i32>) -> Vec<Message> {
        if !self.tasks.contains_key(&id)
            && self.tasks.len() >= self.state.settings.live.max_subscriptions
        {
            return vec![error_frame(
                "too_many_subscriptions",
                "unsubscribe from a task first",
                Some(&id),
            )];
        }
        let task = match store::get(&self.state.db, &id).await {
            Ok(Some(t)) if t.user_id == self.user.id || self.user.is_admin => t,
            Ok(_) => return vec![error_frame("not_found", "task not found", Some(&id))],
            Err(e) => {
                tracing::warn!(error = %e, "subscription lookup failed");
                return vec![error_frame("unavailable", "try again", Some(&id))];
            }
        };
        let mut frames = Vec::new();
        let last = match after_seq {
            Some(after) => {
                let evs = store::events_after(&self.state.db, &id, after)
                    .await
                    .unwrap_or_default();
                for e in &evs {
                    frames.push(event_frame(&TaskEvent::from_stored(e, &task.user_id)));
                }
                evs.last().map(|e| e.seq).unwrap_or(after)
            }
            None => {
                let seq = task.seq;
                frames.push(json_frame(
                    json!({ "type": "snapshot", "seq": seq, "task": TaskView::from(task.clone()) }),
                ));
                seq
            }
        };
        // Events that arrived while the store was read are at or below `last`: dropped.
        self.pending.remove(&id);
        if Status::parse(&task.status).is_some_and(Status::is_terminal) && last >= task.seq {
            frames.push(json_frame(
                json!({ "type": "unsubscribed", "task_id": id, "reason": "terminal" }),
            ));
        } else {
            self.tasks.insert(id, last);
        }
        frames
    }
}

fn event_frame(ev: &TaskEvent) -> Message {
    json_frame(event_json(ev))
}

/// The `event` frame's JSON.
pub(crate) fn event_json(ev: &TaskEvent) -> Value {
    json!({
        "type": "event",
        "task_id": ev.task_id,
        "seq": ev.seq,
        "status": ev.status,
        "progress": ev.progress,
        "step": ev.step,
        "message": ev.message,
        "at": ev.at,
    })
}

fn error_frame(code: &str, message: &str, task_id: Option<&str>) -> Message {
    json_frame(json!({ "type": "error", "code": code, "message": message, "task_id": task_id }))
}

fn json_frame(v: Value) -> Message {
    Message::Text(v.to_string().into())
}

/// Sends one frame; false when the client did not take it in time.
async fn send(
    sink: &mut futures::stream::SplitSink<WebSocket, Message>,
    frame: Message,
    timeout: Duration,
) -> bool {
    send_all(sink, vec![frame], timeout).await
}

/// Writes frames and flushes once; false when the client did not take them in time.
async fn send_all(
    sink: &mut futures::stream::SplitSink<WebSocket, Message>,
    frames: Vec<Message>,
    timeout: Duration,
) -> bool {
    let write = async {
        for frame in frames {
            sink.feed(frame).await?;
        }
        sink.flush().await
    };
    matches!(tokio::time::timeout(timeout, write).await, Ok(Ok(())))
}
