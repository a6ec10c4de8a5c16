//! A video API of another shape than Replicate's, as many vendors' are: `POST /v1/videos`
//! with the model and inputs at the top level (`{"model", "prompt", "duration", "mode"}`)
//! answers `{"task_id"}`; `GET /v1/videos/{id}` answers `{"task_id", "state": "queued" |
//! "running" | "done" | "error", "percent": 0-1, "result": {"video_url"}, "message"}`.
//! Jobs take `ms=<n>` of their prompt (1,000 by default); `fail` ends in `error`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Path, State};
use axum::routing::{get, post};
use serde_json::{Value, json};

#[derive(Default)]
pub struct Studio {
    /// Every create body, in order.
    pub bodies: Mutex<Vec<Value>>,
    jobs: Mutex<HashMap<String, (Instant, Duration, bool)>>,
}

type St = (Arc<Studio>, String);

async fn create(State((studio, _)): State<St>, Json(body): Json<Value>) -> Json<Value> {
    let prompt = body["prompt"].as_str().unwrap_or_default().to_owned();
    let ms = prompt
        .split("ms=")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let id = format!("vid_{}", uuid::Uuid::new_v4().simple());
    studio.jobs.lock().unwrap().insert(
        id.clone(),
        (
            Instant::now(),
            Duration::from_millis(ms),
            prompt.contains("fail"),
        ),
    );
    studio.bodies.lock().unwrap().push(body);
    Json(json!({ "task_id": id }))
}

async fn read(State((studio, base)): State<St>, Path(id): Path<String>) -> Json<Value> {
    let Some((started, run, fail)) = studio.jobs.lock().unwrap().get(&id).copied() else {
        return Json(json!({ "task_id": id, "state": "error", "message": "no such task" }));
    };
    let fraction = started.elapsed().as_secs_f64() / run.as_secs_f64();
    Json(if fraction < 0.1 {
        json!({ "task_id": id, "state": "queued", "percent": 0 })
    } else if fraction < 1.0 {
        json!({ "task_id": id, "state": "running", "percent": (fraction * 100.0).floor() / 100.0 })
    } else if fail {
        json!({ "task_id": id, "state": "error", "message": "the render node crashed" })
    } else {
        json!({ "task_id": id, "state": "done", "percent": 1,
                "result": { "video_url": format!("{base}/files/{id}.mp4"), "seconds": 5 } })
    })
}

/// Starts the fake; its base URL and its state.
pub async fn start() -> (String, Arc<Studio>) {
    let studio = Arc::new(Studio::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/v1/videos", post(create))
        .route("/v1/videos/{id}", get(read))
        .route("/v1/videos/{id}/cancel", post(|| async { "{}" }))
        .route(
            "/files/{name}",
            get(|| async { super::fake_prediction::mp4_bytes() }),
        )
        .with_state((studio.clone(), base.clone()));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, studio)
}
