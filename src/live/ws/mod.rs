//! `GET /v1/ws?ticket=…`: the WebSocket live stream, for every stream kind.
//!
//! Client frames (JSON text):
//! `{"op":"subscribe","stream":"task","id":"…"}` (snapshot, then live events),
//! `{"op":"subscribe","stream":"task","id":"…","after_seq":7}` (the stored events after 7,
//! then live), `{"op":"subscribe","all":true}` (live events of everything the caller
//! owns), `{"op":"unsubscribe","stream":"task","id":"…"}`. `"task_id":"…"` is short for
//! `"stream":"task","id":"…"`.
//! Server frames: `{"type":"snapshot","stream":"task","id":…,"seq":…,"task":{…}}`,
//! `{"type":"event","stream":…,"id":…,"seq":…,…}` (plus the kind's fields, for a task
//! task_id, status, progress, step, message, at), `{"type":"unsubscribed",…,"reason":…}`
//! (a terminal event ends its subscription), `{"type":"error","code":…,"message":…}`.
//! Frames about one thing also carry `<stream>_id` (e.g. `task_id`).
//!
//! Limits: frame size, subscriptions per connection, ping/idle timeout. Live events wait
//! in a per-connection list that keeps only the latest per thing, so a slow reader gets
//! progress coalesced; one that cannot take a frame within `live.send_timeout_ms` is
//! closed. It never slows other connections: the hub hands each only what it follows
//! (see [`crate::live::hub`]), into a queue of its own.

mod follows;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::HeaderMap;
use axum::response::Response;
use futures::{SinkExt as _, StreamExt as _};
use sea_orm::EntityTrait as _;
use serde::Deserialize;

use crate::api::openapi::ErrorBody;
use crate::error::ApiError;
use crate::live::control::KeyEnded;
use crate::live::follow::Follow;
use crate::live::hub::{Events, Recv, Taps};
use crate::live::{Live, Shared};
use crate::users::User;
use follows::error_frame;

#[derive(Debug, Deserialize)]
pub struct Params {
    ticket: Option<String>,
}

/// Checks Origin and the ticket before upgrading: a refused client never gets a socket.
#[utoipa::path(get, path = "/v1/ws", tag = "live",
    params(("ticket" = String, Query, description = "From `POST /v1/ws-tickets`")),
    responses(
        (status = 101, description = "WebSocket: JSON text frames; see docs/api/live.md for the frames"),
        (status = 400, description = "Not a WebSocket upgrade request", body = String),
        (status = 401, description = "Missing, forged, expired or reused ticket", body = ErrorBody),
        (status = 403, description = "`Origin` outside `live.allowed_origins`", body = ErrorBody),
        (status = 429, description = "`too_many_streams` (this account's open streams on this server) or `too_many_failed_authentications` (this address sent too many invalid tickets or keys)", body = ErrorBody)))]
pub async fn upgrade(
    State(state): State<Live>,
    crate::api::ApiQuery(params): crate::api::ApiQuery<Params>,
    headers: HeaderMap,
    slot: Option<axum::Extension<crate::api::server::ConnectionSlot>>,
    peer: Option<axum::Extension<crate::api::auth_failures::Peer>>,
    ws: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    let core = &state.core;
    if let Some(origin) = headers.get(axum::http::header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !same_origin(origin, &headers)
            && !state.settings.allowed_origins.iter().any(|o| o == origin)
        {
            return Err(ApiError::forbidden());
        }
    }
    let ticket = params.ticket.ok_or(ApiError::unauthorized())?;
    // A forged ticket costs an UPDATE: failed redemptions share the address's budget of
    // failed authentications.
    let peer = peer.map(|axum::Extension(p)| p);
    let failures = core.auth_cache.failures();
    if let Some(wait) = failures.peer_blocked(peer) {
        return Err(ApiError::too_many(
            "too_many_failed_authentications",
            "too many requests with invalid credentials from this address".into(),
            wait.as_secs().max(1),
        ));
    }
    // Notices from here on reach the connection; a key revoked before is caught below (a
    // ticket outlives its key's revocation by up to its TTL).
    let controls = state
        .hub
        .bus()
        .subscribe(&crate::users::notices::KEY_NOTICES);
    let Some((user_id, key_hash)) = super::tickets::redeem(&core.db, &ticket).await? else {
        failures.record(&crate::users::hash_key(&ticket), peer);
        return Err(ApiError::unauthorized());
    };
    if let Some(h) = &key_hash
        && !super::control::key_is_live(&core.db, h).await
    {
        return Err(ApiError::unauthorized());
    }
    let user = crate::users::entity::user::Entity::find_by_id(user_id)
        .one(&core.db)
        .await?
        .ok_or(ApiError::unauthorized())?;
    let permit = super::open_stream(&core.limits, &user.id).await?;
    let live = &state.settings;
    let ws = ws
        .max_message_size(live.max_message_bytes)
        .max_frame_size(live.max_message_bytes)
        .read_buffer_size(live.buffer_bytes)
        .write_buffer_size(live.buffer_bytes)
        .max_write_buffer_size(live.buffer_bytes * 16);
    // What the closure captures moves into one boxed connection, so the connection's
    // task (alive as long as the socket, ten thousand of them) holds each once.
    Ok(ws.on_upgrade(move |socket| {
        let (taps, events) = state.hub.listen();
        let open = Open {
            controls,
            _permit: permit,
            _slot: slot,
        };
        Box::new(Connection::new(state, user, key_hash, taps)).run(socket, open, events)
    }))
}

/// What a connection holds until it ends: its key notices, and the stream and socket
/// permits it counts against (`live.max_streams_per_user`, `server.max_connections`).
struct Open {
    controls: tokio::sync::broadcast::Receiver<Arc<crate::users::notices::KeyNotice>>,
    _permit: crate::limits::StreamPermit,
    _slot: Option<axum::Extension<crate::api::server::ConnectionSlot>>,
}

struct Connection {
    state: Live,
    user: User,
    /// The key its ticket was issued with: revoking it closes the connection.
    key_hash: Option<String>,
    /// Followed things by id (ids are unique across stream kinds).
    subs: HashMap<String, Follow>,
    all: bool,
    /// Live events not sent yet, latest per thing.
    pending: Pending,
    /// What the hub routes to this connection: its followed things (and, with `all`,
    /// its owner's).
    taps: Taps,
}

/// Events waiting to be written: the latest per thing, except that an event marked `keep`
/// (a piece of streamed text) is never replaced, only followed. A short list: a
/// connection rarely has more than a few things in flight, and a scan beats hashing and
/// copying the id for every event on every connection.
#[derive(Default)]
struct Pending(Vec<Arc<Shared>>);

impl Pending {
    fn insert(&mut self, shared: Arc<Shared>) {
        // Only the thing's newest waiting event may be replaced, and only if it can be
        // coalesced: order within a thing is kept.
        match self
            .0
            .iter_mut()
            .rev()
            .find(|p| p.event.id == shared.event.id)
        {
            // Something of the thing already waits to be sent: it is at least as new as a
            // computed event.
            Some(_) if shared.event.transient => {}
            Some(slot) if !slot.event.keep => *slot = shared,
            _ => self.0.push(shared),
        }
    }

    fn remove(&mut self, id: &str) {
        self.0.retain(|p| p.event.id != id);
    }

    /// Moves what waits into `into` (emptied first), keeping both lists' room: a
    /// connection sends without allocating once its lists have grown to its load.
    fn take_into(&mut self, into: &mut Vec<Arc<Shared>>) {
        into.clear();
        std::mem::swap(&mut self.0, into);
    }
}

enum Flow {
    Continue,
    Close(u16, &'static str),
}

impl Connection {
    fn new(state: Live, user: User, key_hash: Option<String>, taps: Taps) -> Self {
        Connection {
            state,
            user,
            key_hash,
            subs: HashMap::new(),
            all: false,
            pending: Pending::default(),
            taps,
        }
    }

    async fn run(mut self: Box<Self>, socket: WebSocket, open: Open, mut events: Events) {
        let live = self.state.settings.clone();
        let send_timeout = Duration::from_millis(live.send_timeout_ms);
        let idle = Duration::from_millis(live.idle_timeout_ms);
        // Not split into halves: one task reads and writes, and the halves' shared lock
        // cost every read and write (the bare broadcast pays nothing of the kind).
        let mut socket = socket;
        let mut ping = tokio::time::interval(Duration::from_millis(live.ping_interval_ms));
        ping.tick().await;
        let mut heard = Instant::now();
        let every = Duration::from_secs(live.key_check_secs);
        let db = self.state.core.db.clone();
        let mut watch = Box::pin(super::control::KeyWatch::start(
            &db,
            self.key_hash.clone(),
            every,
        ))
        .await;
        let key_check = tokio::time::sleep_until(watch.next());
        tokio::pin!(key_check);
        // One waiter for the whole connection: re-registering on the shared token every
        // turn of the loop costs a lock per event at 10,000 connections.
        let shutdown = self.state.core.shutdown.clone().cancelled_owned();
        tokio::pin!(shutdown);
        // Likewise one receiver of key notices, not one per turn.
        let key_ended = super::control::key_ended(open.controls, self.key_hash.clone(), db.clone());
        tokio::pin!(key_ended);
        let (mut sending, mut frames) = (Vec::new(), Vec::new());
        let close = loop {
            // Drain what is pending before waiting again: every frame in one write,
            // under one deadline.
            self.pending.take_into(&mut sending);
            if !sending.is_empty() {
                for ev in sending.drain(..) {
                    self.frames_for(&ev, &mut frames);
                }
                if !send_all(&mut socket, &mut frames, send_timeout).await {
                    break (1008, "too slow: frames not read in time");
                }
            }
            let flow = tokio::select! {
                // Events first: polled alone when one is waiting, as a bare broadcast's
                // reader is (tokio's budget still lets the other branches in).
                biased;
                ev = events.recv() => {
                    match ev {
                        Recv::Event(ev) => self.offer(ev),
                        Recv::Lagged => self.resync().await,
                    }
                    Flow::Continue
                }
                _ = &mut shutdown => Flow::Close(1001, "server shutting down"),
                // The key expired (a rotation's overlap ended) or was revoked unseen.
                _ = &mut key_check => {
                    // Boxed: a rare look keeps its query's state off every connection.
                    if Box::pin(watch.still_valid(&db)).await {
                        key_check.as_mut().reset(watch.next());
                        Flow::Continue
                    } else {
                        Flow::Close(1008, "API key expired or revoked")
                    }
                }
                ended = &mut key_ended => match ended {
                    KeyEnded::Revoked => Flow::Close(1008, "API key revoked"),
                    KeyEnded::Stopping => Flow::Close(1001, "server shutting down"),
                },
                msg = socket.next() => match msg {
                    None | Some(Err(_)) => break (1000, ""),
                    Some(Ok(Message::Close(_))) => break (1000, ""),
                    Some(Ok(Message::Text(text))) => {
                        heard = Instant::now();
                        let mut replies = self.command(text.as_str()).await;
                        if send_all(&mut socket, &mut replies, send_timeout).await {
                            Flow::Continue
                        } else {
                            Flow::Close(1008, "too slow: frames not read in time")
                        }
                    }
                    Some(Ok(Message::Binary(_))) => {
                        let frame = error_frame("unsupported", "send JSON text frames".into(), None);
                        if send(&mut socket, frame, send_timeout).await { Flow::Continue } else { Flow::Close(1008, "too slow") }
                    }
                    Some(Ok(_)) => {
                        heard = Instant::now();
                        Flow::Continue
                    }
                },
                _ = ping.tick() => {
                    if heard.elapsed() > idle {
                        Flow::Close(1001, "idle timeout")
                    } else if send(&mut socket, Message::Ping(Default::default()), send_timeout).await {
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
        let _ = tokio::time::timeout(send_timeout, socket.send(frame)).await;
    }
}

/// Sends one frame; false when the client did not take it in time.
async fn send(socket: &mut WebSocket, frame: Message, timeout: Duration) -> bool {
    send_all(socket, &mut vec![frame], timeout).await
}

/// Writes frames (leaving `frames` empty, its room kept) and flushes once; false when
/// the client did not take them in time.
async fn send_all(socket: &mut WebSocket, frames: &mut Vec<Message>, timeout: Duration) -> bool {
    let write = async {
        for frame in frames.drain(..) {
            socket.feed(frame).await?;
        }
        socket.flush().await
    };
    tokio::pin!(write);
    // A socket with room takes the frames at once: no timer to set and cancel for that
    // (the deadline starts a few microseconds later for one that has none).
    if let std::task::Poll::Ready(r) = futures::poll!(&mut write) {
        return r.is_ok();
    }
    matches!(tokio::time::timeout(timeout, write).await, Ok(Ok(())))
}

/// Whether `origin` is the server's own (the page that opens the socket was served by the
/// host it connects to: `/demo`, `/ops`, on whatever address the server listens). A
/// browser sets both headers; a page elsewhere cannot claim this host as its origin.
fn same_origin(origin: &str, headers: &HeaderMap) -> bool {
    let Some(host) = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
    else {
        return false;
    };
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|o| o.eq_ignore_ascii_case(host))
}
