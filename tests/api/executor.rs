//! The OpenAI-compatible executor against a local server that speaks the same protocol.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use conveyor::domains::ai_tasks::TaskKind;
use conveyor::domains::ai_tasks::executor::openai::OpenAi;
use conveyor::domains::ai_tasks::executor::{ExecError, Executor, Job};
use conveyor::domains::ai_tasks::settings::OpenAiSettings;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Fake {
    calls: AtomicU32,
}

/// Answers by prompt: "rate-limit" → 429, "bad" → 400, "boom" → 503, else a completion.
async fn completions(
    State(fake): State<Arc<Fake>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    fake.calls.fetch_add(1, Ordering::SeqCst);
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer sk-test") {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({ "error": { "message": "no key" } })),
        );
    }
    let prompt = body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    match prompt.as_str() {
        "rate-limit" => (
            StatusCode::TOO_MANY_REQUESTS,
            Json(json!({ "error": { "message": "slow down" } })),
        ),
        "bad" => (
            StatusCode::BAD_REQUEST,
            Json(json!({ "error": { "message": "content policy" } })),
        ),
        "boom" => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "error": { "message": "overloaded" } })),
        ),
        _ => (
            StatusCode::OK,
            Json(json!({
                "id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
                "choices": [{ "index": 0, "message": { "role": "assistant", "content": format!("Copy for: {prompt}") }, "finish_reason": "stop" }]
            })),
        ),
    }
}

async fn fake_provider() -> (String, Arc<Fake>) {
    let fake = Arc::new(Fake::default());
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/v1"), fake)
}

fn settings(base_url: &str, rps: u32) -> OpenAiSettings {
    OpenAiSettings {
        base_url: base_url.to_owned(),
        model: "test-model".into(),
        api_key: "sk-test".into(),
        timeout_ms: 2000,
        requests_per_second: rps,
    }
}

async fn run(exec: &OpenAi, prompt: &str) -> Result<Value, ExecError> {
    let params = json!({});
    let previous = Value::Null;
    let job = Job {
        task_id: "t1",
        user_id: "u1",
        kind: TaskKind::Copywriting,
        step: "generate",
        step_index: 0,
        prompt,
        params: &params,
        attempt: 1,
        previous: &previous,
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    exec.run(&job, &tx, &CancellationToken::new()).await
}

#[tokio::test]
async fn completions_and_error_classes() {
    let (url, fake) = fake_provider().await;
    let exec = OpenAi::new(&settings(&url, 100)).unwrap();
    let out = run(&exec, "tea for summer").await.unwrap();
    assert_eq!(out["text"], "Copy for: tea for summer");
    assert_eq!(out["model"], "test-model");
    assert!(
        matches!(run(&exec, "rate-limit").await, Err(ExecError::Transient(m)) if m.contains("429"))
    );
    assert!(matches!(run(&exec, "boom").await, Err(ExecError::Transient(m)) if m.contains("503")));
    assert!(matches!(run(&exec, "bad").await, Err(ExecError::Permanent(m)) if m.contains("400")));
    assert_eq!(fake.calls.load(Ordering::SeqCst), 4);

    // A provider that is not there is transient; so is one that does not answer in time.
    let gone = OpenAi::new(&settings("http://127.0.0.1:9", 100)).unwrap();
    assert!(matches!(
        run(&gone, "x").await,
        Err(ExecError::Transient(_))
    ));
}

#[tokio::test]
async fn the_client_side_rate_limit_holds() {
    let (url, fake) = fake_provider().await;
    let exec = Arc::new(OpenAi::new(&settings(&url, 5)).unwrap());
    let start = Instant::now();
    let calls = (0..10).map(|i| {
        let exec = exec.clone();
        async move { run(&exec, &format!("p{i}")).await.unwrap() }
    });
    futures::future::join_all(calls).await;
    // 5 per second: the first 5 go at once, the next 5 over the following second.
    assert!(
        start.elapsed() >= Duration::from_millis(800),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(fake.calls.load(Ordering::SeqCst), 10);
}
