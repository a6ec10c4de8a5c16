//! `GET /v1/tasks/{id}/events`: Server-Sent Events for one task (API key auth).
//! Each event's `id:` is its sequence number; a client reconnecting with
//! `Last-Event-ID: n` receives exactly the stored events after n, then live ones. Without
//! it the first event is a `snapshot`. The stream ends after a terminal event.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use crate::api::AuthUser;
use crate::api::openapi::ErrorBody;
use crate::app::AppState;
use crate::domains::ai_tasks::Status;
use crate::domains::ai_tasks::messages::TaskEvent;
use crate::domains::ai_tasks::routes::TaskView;
use crate::domains::ai_tasks::store;
use crate::error::ApiError;

fn sse_event(ev: &TaskEvent) -> Event {
    Event::default()
        .id(ev.seq.to_string())
        .event("progress")
        .data(serde_json::to_string(ev).unwrap_or_default())
}

fn terminal(status: &str) -> bool {
    Status::parse(status).is_some_and(Status::is_terminal)
}

#[utoipa::path(get, path = "/v1/tasks/{id}/events", tag = "live", security(("api_key" = [])),
    params(
        ("id" = String, Path, description = "Task id"),
        ("Last-Event-ID" = Option<u64>, Header, description = "Resume after this sequence number")),
    responses(
        (status = 200, description = "Server-Sent Events: `snapshot`, then `progress` events (`id:` is the sequence number); ends after a terminal event", content_type = "text/event-stream", body = String),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 404, description = "No such task of the caller's", body = ErrorBody)))]
pub async fn stream(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let task = match store::get(&state.db, &id).await? {
        Some(t) if t.user_id == user.id || user.is_admin => t,
        _ => return Err(ApiError::NotFound("task")),
    };
    let after: Option<i32> = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(|| {
                    ApiError::bad_request("Last-Event-ID", "must be a sequence number")
                })?,
        ),
    };
    // Attach to the live fan-out before reading the store: nothing falls in between.
    let mut live = state.hub.subscribe();
    let (tx, rx) = mpsc::channel::<Event>(64);
    let db = state.db.clone();
    let shutdown = state.shutdown.clone();
    tokio::spawn(async move {
        let mut last = match after {
            Some(after) => {
                let evs = store::events_after(&db, &task.id, after)
                    .await
                    .unwrap_or_default();
                for e in &evs {
                    let ev = TaskEvent::from_stored(e, &task.user_id);
                    if tx.send(sse_event(&ev)).await.is_err() {
                        return;
                    }
                }
                evs.last().map(|e| e.seq).unwrap_or(after)
            }
            None => {
                let snapshot = Event::default()
                    .id(task.seq.to_string())
                    .event("snapshot")
                    .data(json!(TaskView::from(task.clone())).to_string());
                if tx.send(snapshot).await.is_err() {
                    return;
                }
                task.seq
            }
        };
        if terminal(&task.status) && last >= task.seq {
            return;
        }
        loop {
            let ev = tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tx.closed() => return,
                ev = live.recv() => ev,
            };
            match ev {
                Ok(shared) if shared.event.task_id == task.id && shared.event.seq > last => {
                    let ev = &shared.event;
                    last = ev.seq;
                    if tx.send(sse_event(ev)).await.is_err() || terminal(&ev.status) {
                        return;
                    }
                }
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => {
                    // Fell behind the fan-out: catch up from the store.
                    for e in store::events_after(&db, &task.id, last)
                        .await
                        .unwrap_or_default()
                    {
                        let ev = TaskEvent::from_stored(&e, &task.user_id);
                        last = ev.seq;
                        if tx.send(sse_event(&ev)).await.is_err() || terminal(&ev.status) {
                            return;
                        }
                    }
                }
                Err(RecvError::Closed) => return,
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
