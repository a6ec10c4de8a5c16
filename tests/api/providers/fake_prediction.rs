//! A wire-faithful prediction API for the tests, as Replicate's reference documents it:
//! `POST /v1/predictions` with `{version, input, webhook, webhook_events_filter}`
//! answers 201 with the prediction (`id`, `status: "starting"`, `urls`); `GET
//! /v1/predictions/{id}` reads it (`starting`, then `processing` with tqdm-style
//! progress bars in `logs`, then `succeeded` with `output` URLs and
//! `metrics.predict_time`, or `failed` with `error`); `POST
//! /v1/predictions/{id}/cancel` cancels a running one. With a `webhook`, the finished
//! prediction is POSTed to it once it ends, signed as Standard Webhooks (Replicate's
//! scheme) when the fake has a secret.
//!
//! What a job does is chosen by its prompt: `ms=<n>` (how long it runs, 1,500 by
//! default), `fail` (ends `failed`), `hold` (runs until canceled), `twice` (its webhook
//! is sent twice at once).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

/// The callback base URL the tests configure; the fake sends webhooks to the app
/// instead once it knows the app's address.
pub const CALLBACK_BASE: &str = "http://callback.invalid";

pub struct Job {
    pub id: String,
    pub input: Value,
    pub webhook: Option<String>,
    started: Instant,
    run: Duration,
    fail: bool,
    hold: bool,
    canceled: bool,
}

#[derive(Default)]
pub struct Fake {
    pub jobs: Mutex<HashMap<String, Job>>,
    pub creates: AtomicU32,
    pub gets: AtomicU32,
    pub cancels: AtomicU32,
    pub webhooks_sent: AtomicU32,
    /// The app's base URL, where webhooks go.
    pub app: Mutex<Option<String>>,
    /// Signs webhooks (Standard Webhooks) when set.
    pub secret: Mutex<Option<String>>,
    /// Every webhook the fake sent: (status code answered, body).
    pub webhook_answers: Mutex<Vec<u16>>,
}

fn number_after(prompt: &str, key: &str) -> Option<u64> {
    let at = prompt.find(key)? + key.len();
    prompt[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// A minimal MP4: an `ftyp` box (`isom`) and an empty `mdat`, what a sniffer reads.
pub fn mp4_bytes() -> Vec<u8> {
    let mut b = vec![0, 0, 0, 0x18];
    b.extend_from_slice(b"ftypisom");
    b.extend_from_slice(&[0, 0, 2, 0]);
    b.extend_from_slice(b"isomiso2");
    b.extend_from_slice(&[0, 0, 0, 0x08]);
    b.extend_from_slice(b"mdat");
    b.resize(4096, 0);
    b
}

impl Fake {
    /// Whether every job has run its course (`ms=`) or was canceled: a check now finds
    /// each ended.
    pub fn all_ended(&self) -> bool {
        self.jobs
            .lock()
            .unwrap()
            .values()
            .all(|j| j.canceled || (!j.hold && j.started.elapsed() >= j.run))
    }

    /// The prediction as the API shows it now.
    fn view(&self, base: &str, j: &Job) -> Value {
        let elapsed = j.started.elapsed();
        let fraction = elapsed.as_secs_f64() / j.run.as_secs_f64().max(0.001);
        let (status, logs) = if j.canceled {
            ("canceled", String::new())
        } else if j.hold || fraction < 1.0 {
            if fraction < 0.1 {
                ("starting", String::new())
            } else {
                let pct = ((fraction.min(0.99)) * 100.0) as u32;
                let bar = format!(
                    "{pct:3}%|{:10}| {}/100 [00:01<00:02]",
                    "#".repeat((pct / 10) as usize),
                    pct
                );
                ("processing", format!("loading model\n{bar}\n"))
            }
        } else if j.fail {
            ("failed", "out of memory\n".to_owned())
        } else {
            ("succeeded", "100%|##########| 100/100\n".to_owned())
        };
        let mut v = json!({
            "id": j.id,
            "version": "5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa",
            "input": j.input,
            "status": status,
            "logs": logs,
            "output": null,
            "error": null,
            "urls": {
                "get": format!("{base}/v1/predictions/{}", j.id),
                "cancel": format!("{base}/v1/predictions/{}/cancel", j.id),
            },
        });
        match status {
            "succeeded" => {
                v["output"] = json!([format!("{base}/files/{}.mp4", j.id)]);
                v["metrics"] = json!({ "predict_time": j.run.as_secs_f64() });
            }
            "failed" => v["error"] = json!("CUDA out of memory"),
            _ => {}
        }
        v
    }
}

type St = (Arc<Fake>, String);

async fn create(
    State((fake, base)): State<St>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer r8-test") {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({ "detail": "Invalid token." })),
        )
            .into_response();
    }
    if body.get("version").and_then(Value::as_str).is_none() || !body["input"].is_object() {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({ "detail": "version and input are required" })),
        )
            .into_response();
    }
    let n = fake.creates.fetch_add(1, Ordering::SeqCst);
    let prompt = body["input"]["prompt"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let id = format!("pred{n:04}x{}", uuid::Uuid::new_v4().simple());
    let job = Job {
        id: id.clone(),
        input: body["input"].clone(),
        webhook: body
            .get("webhook")
            .and_then(Value::as_str)
            .map(str::to_owned),
        started: Instant::now(),
        run: Duration::from_millis(number_after(&prompt, "ms=").unwrap_or(1500)),
        fail: prompt.contains("fail"),
        hold: prompt.contains("hold"),
        canceled: false,
    };
    let view = fake.view(&base, &job);
    let (run, webhook, hold) = (job.run, job.webhook.clone(), job.hold);
    fake.jobs.lock().unwrap().insert(id.clone(), job);
    if let (Some(hook), false) = (webhook, hold) {
        let times = if prompt.contains("twice") { 2 } else { 1 };
        let (fake, base) = (fake.clone(), base.clone());
        tokio::spawn(async move {
            tokio::time::sleep(run + Duration::from_millis(20)).await;
            let sends = (0..times).map(|_| send_webhook(&fake, &base, &hook, &id));
            futures::future::join_all(sends).await;
        });
    }
    (StatusCode::CREATED, Json(view)).into_response()
}

/// POSTs the prediction to its webhook, as the app's own URL.
pub async fn send_webhook(fake: &Fake, base: &str, hook: &str, id: &str) -> u16 {
    let Some(app) = fake.app.lock().unwrap().clone() else {
        return 0;
    };
    let body = {
        let jobs = fake.jobs.lock().unwrap();
        match jobs.get(id) {
            Some(j) => fake.view(base, j).to_string(),
            None => return 0,
        }
    };
    let url = hook.replace(CALLBACK_BASE, app.trim_end_matches('/'));
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json");
    if let Some(secret) = fake.secret.lock().unwrap().clone() {
        let msg_id = format!("msg_{}", uuid::Uuid::new_v4().simple());
        let ts = chrono::Utc::now().timestamp();
        let sig = conveyor::standard_webhooks::sign(&secret, &msg_id, ts, body.as_bytes()).unwrap();
        req = req
            .header("webhook-id", msg_id)
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", sig);
    }
    fake.webhooks_sent.fetch_add(1, Ordering::SeqCst);
    let code = req
        .body(body)
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0);
    fake.webhook_answers.lock().unwrap().push(code);
    code
}

async fn read(State((fake, base)): State<St>, Path(id): Path<String>) -> Response {
    fake.gets.fetch_add(1, Ordering::SeqCst);
    match fake.jobs.lock().unwrap().get(&id) {
        Some(j) => Json(fake.view(&base, j)).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({ "detail": "Not found." })),
        )
            .into_response(),
    }
}

async fn cancel(State((fake, base)): State<St>, Path(id): Path<String>) -> Response {
    fake.cancels.fetch_add(1, Ordering::SeqCst);
    match fake.jobs.lock().unwrap().get_mut(&id) {
        Some(j) => {
            j.canceled = true;
            Json(fake.view(&base, j)).into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({ "detail": "Not found." })),
        )
            .into_response(),
    }
}

/// Starts the fake; its API base (`…/v1`) and its state.
pub async fn start() -> (String, Arc<Fake>) {
    let fake = Arc::new(Fake::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/v1/predictions", post(create))
        .route("/v1/predictions/{id}", get(read))
        .route("/v1/predictions/{id}/cancel", post(cancel))
        .route("/files/{name}", get(|| async { mp4_bytes() }))
        .with_state((fake.clone(), base.clone()));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("{base}/v1"), fake)
}
