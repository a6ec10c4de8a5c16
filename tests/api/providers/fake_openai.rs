//! A wire-faithful OpenAI-compatible provider for the tests, as the public API reference
//! documents it: `POST /v1/chat/completions` with `stream: true` answers
//! `text/event-stream` of `chat.completion.chunk` objects (a first chunk with the
//! assistant role, one chunk per token, a chunk with `finish_reason: "stop"`, then, with
//! `stream_options.include_usage`, a chunk with empty `choices` and the `usage`), ended
//! by `data: [DONE]`; `POST /v1/images/generations` answers `{"created", "data": [{
//! "b64_json" | "url" }]}`; the audio and embeddings endpoints are in
//! `fake_openai_media`. Errors are `{"error": {"message", "type", "code"}}`.
//!
//! Fault modes, chosen by the prompt: `rate-limit` (429 with `Retry-After: 1`), `boom`
//! (503), `rate-limit-once…` (the first call 429 with `Retry-After: 3`, then fine), `bad`
//! (400 `content_policy_violation`), `bad-once…` (the first call for that prompt 400, later ones
//! fine), `cut-once` (the first stream for that
//! prompt stops halfway without `[DONE]`, later ones are whole), `malformed` (a chunk
//! that is not JSON), `stall` (two tokens, then silence), `slow` (200 ms per token).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde_json::{Value, json};

#[derive(Default)]
pub struct Fake {
    pub calls: AtomicU32,
    /// Streams for a prompt so far (for `cut-once`).
    seen: std::sync::Mutex<HashMap<String, u32>>,
    /// Streams whose client went away before the end (a cancel).
    pub dropped: AtomicU32,
    /// Milliseconds between tokens.
    pub token_ms: u64,
    limited_once: AtomicU32,
    refused_once: std::sync::Mutex<std::collections::HashSet<String>>,
    /// When the `rate-limit-once` 429 was sent.
    pub limited_at: std::sync::Mutex<Option<std::time::Instant>>,
    /// Streams being sent now, and the most at once.
    pub active: AtomicU32,
    pub max_active: AtomicU32,
    /// When each call arrived.
    pub arrivals: std::sync::Mutex<Vec<std::time::Instant>>,
}

/// The text the fake writes for `prompt`, token by token (the tests join them).
/// The prompt tokens every chat completion reports.
pub const PROMPT_TOKENS: u64 = 12;

pub fn tokens_for(prompt: &str) -> Vec<String> {
    format!("Copy for: {prompt} — fresh, bright, ready to post")
        .split_inclusive(' ')
        .map(str::to_owned)
        .collect()
}

fn error(status: StatusCode, kind: &str, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!({ "error": { "message": message, "type": kind, "code": code } })),
    )
        .into_response()
}

fn chunk(model: &str, delta: Value, finish: Option<&str>) -> String {
    let c = json!({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model,
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }]
    });
    format!("data: {c}\n\n")
}

/// Counts a stream whose body was dropped before its end.
struct DropGuard(Arc<Fake>, bool);
impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
        if !self.1 {
            self.0.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

async fn completions(
    State(fake): State<Arc<Fake>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    fake.calls.fetch_add(1, Ordering::SeqCst);
    fake.arrivals
        .lock()
        .unwrap()
        .push(std::time::Instant::now());
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer sk-test") {
        return error(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "invalid_api_key",
            "Incorrect API key provided",
        );
    }
    let prompt = body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let model = body["model"].as_str().unwrap_or("fake").to_owned();
    // Limited once: the first `rate-limit-once…` call is told to come back in 3 s (every
    // client), later ones are fine.
    if prompt.starts_with("rate-limit-once")
        && fake.limited_once.fetch_add(1, Ordering::SeqCst) == 0
    {
        *fake.limited_at.lock().unwrap() = Some(std::time::Instant::now());
        let mut r = error(
            StatusCode::TOO_MANY_REQUESTS,
            "requests",
            "rate_limit_exceeded",
            "Rate limit reached",
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, "3".parse().unwrap());
        return r;
    }
    // Refused once per prompt: the first `bad-once…` call is a 400, later ones are fine.
    if prompt.starts_with("bad-once") && fake.refused_once.lock().unwrap().insert(prompt.clone()) {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "content_policy_violation",
            "Your request was rejected by the safety system",
        );
    }
    match prompt.as_str() {
        "rate-limit" => {
            let mut r = error(
                StatusCode::TOO_MANY_REQUESTS,
                "requests",
                "rate_limit_exceeded",
                "Rate limit reached",
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, "1".parse().unwrap());
            return r;
        }
        "boom" => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                "overloaded",
                "The server is overloaded",
            );
        }
        "bad" => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "content_policy_violation",
                "Your request was rejected by the safety system",
            );
        }
        _ => {}
    }
    assert_eq!(body["stream"], true, "conveyor streams chat completions");
    let n = {
        let mut seen = fake.seen.lock().unwrap();
        let n = seen.entry(prompt.clone()).or_default();
        *n += 1;
        *n
    };
    let mut tokens = tokens_for(&prompt);
    // `max_tokens`: the model stops there (finish_reason "length").
    let limited = body["max_tokens"]
        .as_u64()
        .is_some_and(|max| (max as usize) < tokens.len());
    if let Some(max) = body["max_tokens"].as_u64() {
        tokens.truncate(max as usize);
    }
    let usage = json!({ "prompt_tokens": PROMPT_TOKENS, "completion_tokens": tokens.len(), "total_tokens": PROMPT_TOKENS as usize + tokens.len() });
    let include_usage = body["stream_options"]["include_usage"] == true;
    let cut = prompt.starts_with("cut-once") && n == 1;
    let token_ms = if prompt == "slow" { 200 } else { fake.token_ms };
    let fake2 = fake.clone();
    let stream = async_stream(move |tx| async move {
        let now = fake2.active.fetch_add(1, Ordering::SeqCst) + 1;
        fake2.max_active.fetch_max(now, Ordering::SeqCst);
        let mut guard = DropGuard(fake2, false);
        let send = |s: String| tx.send(Ok::<_, Infallible>(bytes::Bytes::from(s)));
        if send(chunk(
            &model,
            json!({ "role": "assistant", "content": "" }),
            None,
        ))
        .await
        .is_err()
        {
            return;
        }
        for (i, t) in tokens.iter().enumerate() {
            if token_ms > 0 {
                tokio::time::sleep(Duration::from_millis(token_ms)).await;
            }
            if prompt == "malformed" && i == 2 {
                let _ = send("data: {\"choices\": [{\"delta\": \n\n".into()).await;
            }
            if prompt == "stall" && i == 2 {
                // The fake's behaviour, not a wait: a stream that stalls for good.
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            if cut && i == tokens.len() / 2 {
                guard.1 = true;
                return; // the connection ends mid-answer, without [DONE]
            }
            if send(chunk(&model, json!({ "content": t }), None))
                .await
                .is_err()
            {
                return;
            }
        }
        let finish = if limited { "length" } else { "stop" };
        let _ = send(chunk(&model, json!({}), Some(finish))).await;
        if include_usage {
            let u = json!({ "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model, "choices": [], "usage": usage });
            let _ = send(format!("data: {u}\n\n")).await;
        }
        let _ = send("data: [DONE]\n\n".into()).await;
        guard.1 = true;
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// A body stream fed by `f` through a channel (the generator runs as its own task, and
/// stops when the client goes away: its sends fail).
fn async_stream<F, Fut>(f: F) -> Receiver
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<bytes::Bytes, Infallible>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::spawn(f(tx));
    Receiver(rx)
}

pub use body_stream::Receiver;

/// A channel as a response body.
mod body_stream {
    use std::convert::Infallible;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    pub struct Receiver(pub tokio::sync::mpsc::Receiver<Result<bytes::Bytes, Infallible>>);
    impl futures::Stream for Receiver {
        type Item = Result<bytes::Bytes, Infallible>;
        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            self.0.poll_recv(cx)
        }
    }
}

pub fn png_bytes() -> Vec<u8> {
    conveyor::providers::artifacts::draw_png(b"fake-provider", 32, 32).unwrap()
}

async fn images(State(base): State<String>, Json(body): Json<Value>) -> Response {
    let prompt = body["prompt"].as_str().unwrap_or_default();
    let item = if prompt.contains("as-url") {
        json!({ "url": format!("{base}/files/out.png"), "revised_prompt": prompt })
    } else {
        json!({ "b64_json": base64::engine::general_purpose::STANDARD.encode(png_bytes()), "revised_prompt": prompt })
    };
    Json(json!({ "created": 1_700_000_000, "data": [item] })).into_response()
}

/// Starts the fake; its base URL (`http://…/v1`) and its state.
pub async fn start(token_ms: u64) -> (String, Arc<Fake>) {
    let fake = Arc::new(Fake {
        token_ms,
        ..Default::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(fake.clone())
        .merge(
            axum::Router::new()
                .route("/v1/images/generations", post(images))
                .route("/files/out.png", get(|| async { png_bytes() }))
                .with_state(base.clone()),
        )
        .merge(super::fake_openai_media::routes());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("{base}/v1"), fake)
}
