//! Streamed text, provider → conveyor → WebSocket: 1,000 concurrent copywriting tasks
//! against an OpenAI-compatible fake that emits a token every 20 ms. Each token carries
//! the microsecond it was emitted, so the subscriber measures every token's latency
//! (however the 50 ms coalescing joined them), next to the floor measured in the same
//! run: the same number of clients reading the fake's streams directly. Also the CPU
//! conveyor's process, PostgreSQL and RabbitMQ spent per 1,000 tokens relayed (the
//! process's own CPU minus the floor run's, which has the fake and the clients too).
//!
//!     cargo bench --bench streaming [-- STREAMS TOKENS]     (default 1000 100)
//!
//! `STREAMING_COALESCE_MS=100` measures another `ai.stream_coalesce_ms`.
//!
//! Needs RabbitMQ, Redis and PostgreSQL (`scripts/services.sh up`).

// Test and bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use conveyor::app::Application;
use conveyor::broker::settings::QueueOverride;
use eventsource_stream::Eventsource as _;
use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

const TOKEN_EVERY: Duration = Duration::from_millis(20);

fn now_us() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// The fake: `POST /v1/chat/completions` streams `tokens` chunks, one every 20 ms, each
/// token's text the microsecond it was emitted and a space; then the usage and `[DONE]`.
async fn fake(tokens: usize) -> String {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || async move {
            let stream = futures::stream::unfold(0usize, move |i| async move {
                let data = match i {
                    0 => json!({"object": "chat.completion.chunk", "model": "fake", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}).to_string(),
                    i if i <= tokens => {
                        tokio::time::sleep(TOKEN_EVERY).await;
                        json!({"object": "chat.completion.chunk", "model": "fake", "choices": [{"index": 0, "delta": {"content": format!("{} ", now_us())}}]}).to_string()
                    }
                    i if i == tokens + 1 => json!({"object": "chat.completion.chunk", "model": "fake", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": tokens, "total_tokens": 12 + tokens}}).to_string(),
                    i if i == tokens + 2 => "[DONE]".to_owned(),
                    _ => return None,
                };
                Some((Ok::<_, Infallible>(bytes::Bytes::from(format!("data: {data}\n\n"))), i + 1))
            });
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap()
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/v1")
}

/// Latencies (µs) of every token in `text` received now (each token is the
/// microsecond it was emitted).
fn record(text: &str, into: &mut Vec<i64>) {
    let now = now_us();
    into.extend(
        text.split_whitespace()
            .filter_map(|t| t.parse::<i64>().ok())
            .map(|emitted| now - emitted),
    );
}

/// The floor: `streams` clients read the fake directly.
async fn floor(url: &str, streams: usize) -> (Vec<i64>, f64) {
    let client = reqwest::Client::new();
    let started = Instant::now();
    let all = futures::future::join_all((0..streams).map(|_| {
        let client = client.clone();
        let url = format!("{url}/chat/completions");
        async move {
            let mut lat = Vec::new();
            let resp = client
                .post(url)
                .json(&json!({"stream": true}))
                .send()
                .await
                .unwrap();
            let mut events = resp.bytes_stream().eventsource();
            while let Some(Ok(e)) = events.next().await {
                if e.data == "[DONE]" {
                    break;
                }
                let v: Value = serde_json::from_str(&e.data).unwrap();
                if let Some(t) = v
                    .pointer("/choices/0/delta/content")
                    .and_then(Value::as_str)
                {
                    record(t, &mut lat);
                }
            }
            lat
        }
    }))
    .await;
    (all.concat(), started.elapsed().as_secs_f64())
}

fn pct(v: &mut [i64], p: f64) -> f64 {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * p) as usize] as f64 / 1000.0
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("streaming: run with `cargo bench --bench streaming`");
        return;
    }
    let nums: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let streams = nums.first().copied().unwrap_or(1000);
    let tokens = nums.get(1).copied().unwrap_or(100);
    common::raise_file_limit();
    let url = fake(tokens).await;

    let before = common::cpu::cpu_ticks();
    let (mut floor_lat, floor_secs) = floor(&url, streams).await;
    let floor_cpu = common::cpu::cpu_ticks().since(before);
    let relayed = streams * tokens;
    assert_eq!(floor_lat.len(), relayed, "the floor got every token");

    let Some(stack) = common::Stack::start("streaming").await else {
        std::process::exit(0);
    };
    let mut s = stack.settings.clone();
    s.queues.insert(
        "ai.short".into(),
        QueueOverride {
            prefetch: Some(streams.max(1) as u16),
            ..Default::default()
        },
    );
    s.database.max_connections = 48;
    let ai = s.sections.get_mut("ai").unwrap();
    ai["providers"]["openai"]["base_url"] = json!(url);
    ai["providers"]["openai"]["api_key"] = json!("sk-bench");
    ai["providers"]["openai"]["requests_per_second"] = json!(100_000);
    ai["kinds"]["copywriting"]["provider"] = json!("openai");
    // The coalescing window to measure (`ai.stream_coalesce_ms`; 50 by default).
    if let Some(ms) = std::env::var("STREAMING_COALESCE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        ai["stream_coalesce_ms"] = json!(ms);
    }
    let app = Application::build(s.clone()).await.unwrap();
    let addr = app.addr();
    let platform = app.platform().clone();
    let (_, key) = conveyor::users::create(&platform.db, "bench", i64::MAX / 4, false)
        .await
        .unwrap();
    let stop = CancellationToken::new();
    let server = tokio::spawn(app.run_until(stop.clone()));
    let http = reqwest::Client::new();

    // Every task submitted and subscribed to before any consumer runs: each subscriber
    // sees its task's stream from the first token.
    let mut subscribers = Vec::with_capacity(streams);
    let lat = Arc::new(Mutex::new(Vec::with_capacity(relayed)));
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    for i in 0..streams {
        let r: Value = http
            .post(format!("http://{addr}/v1/tasks"))
            .bearer_auth(&key)
            .json(&json!({"kind": "copywriting", "prompt": format!("stream {i}")}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = r["id"].as_str().unwrap().to_owned();
        let t: Value = http
            .post(format!("http://{addr}/v1/ws-tickets"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let ws_url = format!("ws://{addr}/v1/ws?ticket={}", t["ticket"].as_str().unwrap());
        let (mut ws, _) = tokio_tungstenite::connect_async(ws_url).await.unwrap();
        ws.send(Message::Text(
            json!({"op": "subscribe", "task_id": id}).to_string().into(),
        ))
        .await
        .unwrap();
        let (lat, done) = (lat.clone(), done_tx.clone());
        subscribers.push(tokio::spawn(async move {
            let mut mine = Vec::with_capacity(tokens);
            while let Some(Ok(msg)) = ws.next().await {
                let Message::Text(t) = msg else { continue };
                let f: Value = serde_json::from_str(&t).unwrap();
                if f["kind"] == "delta" {
                    record(f["delta"].as_str().unwrap_or(""), &mut mine);
                }
                if f["status"] == "SUCCESS"
                    || f["status"] == "FAILED"
                    || f["type"] == "unsubscribed"
                {
                    break;
                }
            }
            lat.lock().await.extend(mine);
            let _ = done.send(());
        }));
    }
    // What PostgreSQL does per 1,000 tokens (each snapshot waits outside the timing).
    let db_before = common::pg_stats::snapshot(&platform.db).await;
    let before = common::cpu::cpu_ticks();
    let started = Instant::now();
    let workers = {
        let (p, t) = (platform.clone(), stop.clone());
        tokio::spawn(async move {
            conveyor::app::run_workers(&p, conveyor::domains::ALL, Some(&["ai".to_owned()]), t)
                .await
        })
    };
    let mut finished = 0;
    while finished < streams {
        match tokio::time::timeout(Duration::from_secs(120), done_rx.recv()).await {
            Ok(Some(())) => finished += 1,
            _ => break,
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let cpu = common::cpu::cpu_ticks().since(before);
    let db_after = common::pg_stats::snapshot(&platform.db).await;
    stop.cancel();
    let _ = server.await;
    let _ = workers.await;
    stack.teardown().await;

    let mut lat = std::mem::take(&mut *lat.lock().await);
    println!(
        "{streams} streams × {tokens} tokens, one every {} ms",
        TOKEN_EVERY.as_millis()
    );
    println!(
        "floor (client reads the provider):  {} tokens in {floor_secs:.1} s, latency p50 {:>6.1} ms  p99 {:>6.1} ms",
        floor_lat.len(),
        pct(&mut floor_lat, 0.5),
        pct(&mut floor_lat, 0.99)
    );
    println!(
        "conveyor (provider → WebSocket):    {} tokens in {secs:.1} s ({finished} streams ended), latency p50 {:>6.1} ms  p99 {:>6.1} ms",
        lat.len(),
        pct(&mut lat, 0.5),
        pct(&mut lat, 0.99)
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    println!(
        "machine busy: floor run {:.0} %, conveyor run {:.0} % of {cores} cores",
        floor_cpu.machine as f64 / (floor_secs * 100.0 * cores) * 100.0,
        cpu.machine as f64 / (secs * 100.0 * cores) * 100.0,
    );
    let per_k = |ticks: u64| common::cpu::ms_per(ticks, relayed, 1000);
    println!(
        "CPU per 1,000 tokens relayed: conveyor process {:.1} ms (its run {:.1} − floor run {:.1}), PostgreSQL {:.1} ms, RabbitMQ {:.1} ms, Redis {:.1} ms",
        per_k(cpu.own.saturating_sub(floor_cpu.own)),
        per_k(cpu.own),
        per_k(floor_cpu.own),
        per_k(cpu.db),
        per_k(cpu.broker),
        per_k(cpu.redis)
    );
    if let (Some(b), Some(a)) = (&db_before, &db_after) {
        for line in common::pg_stats::per_unit(b, a, relayed.div_ceil(1000)) {
            println!("database per 1,000 tokens: {line}");
        }
    }
    assert_eq!(lat.len(), relayed, "every token reached its subscriber");
}
