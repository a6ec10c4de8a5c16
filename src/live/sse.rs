//! Server-Sent Events for one followed thing (API key auth):
//! `GET /v1/streams/{stream}/{id}/events`, and `GET /v1/tasks/{id}/events` for tasks.
//! Each event's `id:` is its sequence number; a client reconnecting with
//! `Last-Event-ID: n` receives exactly the stored events after n, then live ones. Without
//! it the first event is a `snapshot`. The stream ends after a terminal event, with an
//! `end` event (`{"reason":"terminal"}`) so a client knows not to resume it.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use serde_json::json;
use tokio::sync::mpsc;

use super::follow::{Follow, FollowError, Opening};
use super::hub::Recv;
use super::{Event, Live};
use crate::api::openapi::ErrorBody;
use crate::api::{AuthUser, CallerKey};
use crate::error::ApiError;

/// One Server-Sent Event as a client parses it (documentation only).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct SseFrame {
    /// The event's sequence number (resume with `Last-Event-ID`); none on computed
    /// `line` events and on `end`.
    id: Option<String>,
    /// `snapshot` (the thing as it stands), `progress` (one stored event), `line` (a
    /// waiting task's place in line, computed: no `id`) or `end` (the last: the thing is
    /// final, do not reconnect).
    event: String,
    /// JSON: the snapshot's view, or the event's fields.
    data: String,
}

/// The last event of a stream that ended because its thing did: a client tells it from a
/// dropped connection (which it resumes) without knowing each kind's final states.
fn end() -> SseEvent {
    SseEvent::default()
        .event("end")
        .data(r#"{"reason":"terminal"}"#)
}

/// Sends one event, and `end` after a terminal one; false when the stream is over (it
/// ended, or the client left).
async fn send(tx: &mpsc::Sender<SseEvent>, ev: &Event) -> bool {
    if tx.send(sse_event(ev)).await.is_err() {
        return false;
    }
    if ev.terminal {
        let _ = tx.send(end()).await;
        return false;
    }
    true
}

fn sse_event(ev: &Event) -> SseEvent {
    // A computed event (a waiting task's place in line) has no id of its own: a client's
    // `Last-Event-ID` stays the stored event's.
    if ev.transient {
        return SseEvent::default()
            .event("line")
            .data(ev.frame_json().to_string());
    }
    SseEvent::default()
        .id(ev.seq.to_string())
        .event("progress")
        .data(ev.frame_json().to_string())
}

#[utoipa::path(get, path = "/v1/streams/{stream}/{id}/events", tag = "live", security(("api_key" = [])),
    params(
        ("stream" = String, Path, description = "Stream kind, e.g. `task`"),
        ("id" = String, Path, description = "The followed thing's id"),
        ("Last-Event-ID" = Option<i64>, Header, nullable = false, minimum = 0, description = "Resume after this sequence number")),
    responses(
        (status = 200, description = "Server-Sent Events: `snapshot`, then `progress` events (`id:` is the sequence number); after a terminal event an `end` event, and the stream ends", content_type = "text/event-stream", body = SseFrame),
        (status = 400, description = "`Last-Event-ID` is not a sequence number", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such stream kind, or no such thing of the caller's", body = ErrorBody),
        (status = 429, description = "`too_many_streams`: this account's open streams on this server", body = ErrorBody)))]
pub async fn stream(
    State(state): State<Live>,
    user: AuthUser,
    key: CallerKey,
    Path((stream, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    follow(state, (user, key), stream, id, headers).await
}

#[utoipa::path(get, path = "/v1/tasks/{id}/events", tag = "live", security(("api_key" = [])),
    params(
        ("id" = String, Path, description = "Task id"),
        ("Last-Event-ID" = Option<i64>, Header, nullable = false, minimum = 0, description = "Resume after this sequence number")),
    responses(
        (status = 200, description = "Server-Sent Events of one task (the `task` stream)", content_type = "text/event-stream", body = SseFrame),
        (status = 400, description = "`Last-Event-ID` is not a sequence number", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such task of the caller's", body = ErrorBody),
        (status = 429, description = "`too_many_streams`: this account's open streams on this server", body = ErrorBody)))]
pub async fn task_stream(
    State(state): State<Live>,
    user: AuthUser,
    key: CallerKey,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    follow(
        state,
        (user, key),
        super::TASK_STREAM.to_owned(),
        id,
        headers,
    )
    .await
}

async fn follow(
    state: Live,
    (AuthUser(user), CallerKey(key_hash)): (AuthUser, CallerKey),
    stream: String,
    id: String,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let source = state
        .sources
        .get(&stream)
        .cloned()
        .ok_or(ApiError::not_found("stream"))?;
    let after: Option<i64> = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .filter(|n: &i64| *n >= 0)
                .ok_or_else(|| {
                    ApiError::bad_request("Last-Event-ID", "must be a sequence number")
                })?,
        ),
    };
    // Held while the stream is open: the user's open streams are capped.
    let permit = super::open_stream(&state.core.limits, &user.id).await?;
    // Attach to the live fan-out before reading the store: nothing falls in between.
    let (mut taps, mut live) = state.hub.listen();
    taps.follow(&id);
    let controls = state
        .hub
        .bus()
        .subscribe(&crate::users::notices::KEY_NOTICES);
    let db = state.core.db.clone();
    // A key revoked between the authentication and the subscription above.
    if !super::control::key_is_live(&db, &key_hash).await {
        return Err(ApiError::unauthorized());
    }
    let (mut follow, opening, over) = Follow::start(source, &db, &user, &id, after)
        .await
        .map_err(|e| match e {
            FollowError::NotFound => ApiError::not_found("stream item"),
            FollowError::Store(e) => e.into(),
        })?;
    let (tx, rx) = mpsc::channel::<SseEvent>(64);
    let shutdown = state.core.shutdown.clone().cancelled_owned();
    let every = Duration::from_secs(state.settings.key_check_secs);
    let mut watch = super::control::KeyWatch::start(&db, Some(key_hash.clone()), every).await;
    tokio::spawn(async move {
        let (_permit, _taps) = (permit, taps);
        let first = match opening {
            Opening::Snapshot(s) => vec![
                SseEvent::default()
                    .id(s.seq.to_string())
                    .event("snapshot")
                    .data(json!(s.view).to_string()),
            ],
            Opening::Events(evs) => evs.iter().map(sse_event).collect(),
        };
        for e in first {
            if tx.send(e).await.is_err() {
                return;
            }
        }
        if over {
            let _ = tx.send(end()).await;
            return;
        }
        let key_check = tokio::time::sleep_until(watch.next());
        tokio::pin!(key_check);
        // One waiter each for the stream's life (see the WebSocket loop).
        tokio::pin!(shutdown);
        let key_ended = super::control::key_ended(controls, Some(key_hash), db.clone());
        tokio::pin!(key_ended);
        loop {
            let ev = tokio::select! {
                _ = &mut shutdown => return,
                _ = tx.closed() => return,
                // The key expired (a rotation's overlap ended) or was revoked unseen.
                _ = &mut key_check => {
                    if !watch.still_valid(&db).await {
                        return;
                    }
                    key_check.as_mut().reset(watch.next());
                    continue;
                }
                _ = &mut key_ended => return,
                ev = live.recv() => ev,
            };
            let events = match ev {
                Recv::Event(shared) => {
                    let ev = &shared.event;
                    if follow.accept(ev) && !send(&tx, ev).await {
                        return;
                    }
                    continue;
                }
                // Fell behind the fan-out: catch up from the store.
                Recv::Lagged => follow.missed(&db).await.unwrap_or_default(),
            };
            for ev in &events {
                if follow.accept(ev) && !send(&tx, ev).await {
                    return;
                }
            }
        }
    });
    let stream =
        futures::stream::unfold(
            rx,
            |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
        );
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
