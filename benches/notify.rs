//! Outgoing webhooks at scale (issue 37): 10,000 events for 100 tenants, one endpoint
//! each, one tenth of them slow (every answer takes 2 s) and one tenth failing (500, so
//! retried on the backoff). One consumer process (`conveyor consume webhooks`) on
//! RabbitMQ + PostgreSQL + Redis. Measured: the rate and the time from the state change's
//! commit to the arrival at the healthy endpoints (p50/p99), against a plain HTTP client
//! loop making the same POSTs with the same concurrency (128) — over every endpoint (where
//! the slow ones hold its slots) and over the healthy ones alone (the floor of the work).
//!
//!     cargo bench --bench notify                 # needs scripts/services.sh up
//!     cargo bench --bench notify -- 2000         # events (10,000 by default)

// Bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

#[path = "common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::post;
use conveyor::domains::ai_tasks::events::SUCCEEDED;
use conveyor::domains::webhooks::store::{self as endpoints, NewEndpoint};
use conveyor::events::Event;
use futures::StreamExt as _;
use sea_orm::TransactionTrait as _;
use serde_json::json;

const ENDPOINTS: usize = 100;
const SLOW: Duration = Duration::from_secs(2);
const CONCURRENCY: usize = 128;

fn slow(n: usize) -> bool {
    n.is_multiple_of(10)
}

fn failing(n: usize) -> bool {
    n % 10 == 1
}

/// When each event's body reached a healthy endpoint (the first time).
#[derive(Default)]
struct Arrivals {
    at: Mutex<HashMap<String, Instant>>,
    failed_answers: std::sync::atomic::AtomicU64,
}

async fn hook(
    State(arrivals): State<Arc<Arrivals>>,
    Path(n): Path<usize>,
    body: String,
) -> StatusCode {
    if failing(n) {
        arrivals
            .failed_answers
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return StatusCode::INTERNAL_SERVER_ERROR;
    }
    if slow(n) {
        tokio::time::sleep(SLOW).await;
        return StatusCode::OK;
    }
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    let id = v["data"]["id"].as_str().unwrap_or_default().to_owned();
    arrivals
        .at
        .lock()
        .unwrap()
        .entry(id)
        .or_insert_with(Instant::now);
    StatusCode::OK
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Rate (healthy deliveries/s) and latency percentiles (ms) of `arrivals` against `sent`.
fn report(name: &str, sent: &HashMap<String, Instant>, arrivals: &Arrivals, start: Instant) {
    let at = arrivals.at.lock().unwrap();
    let mut lat: Vec<f64> = at
        .iter()
        .filter_map(|(id, t)| {
            sent.get(id)
                .map(|s| t.duration_since(*s).as_secs_f64() * 1000.0)
        })
        .collect();
    lat.sort_by(f64::total_cmp);
    let last = at.values().max().copied().unwrap_or(start);
    let wall = last.duration_since(start).as_secs_f64();
    println!(
        "{name:<34} {:>6} healthy deliveries in {wall:>6.2} s = {:>7.0}/s; commit/send to arrival p50 {:>7.1} ms, p99 {:>7.1} ms",
        lat.len(),
        lat.len() as f64 / wall.max(1e-9),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99)
    );
}

/// Commits `events` events (data ids `<prefix><i>`) for the tenants in turn, 100 a
/// transaction; when each was committed.
async fn commit_events(
    platform: &conveyor::app::Platform,
    users: &[String],
    prefix: &str,
    events: usize,
) -> HashMap<String, Instant> {
    let mut committed = HashMap::with_capacity(events);
    for chunk in (0..events).collect::<Vec<_>>().chunks(100) {
        let batch: Vec<Event> = chunk
            .iter()
            .map(|i| {
                Event::new(
                    users[i % ENDPOINTS].clone(),
                    &SUCCEEDED,
                    json!({ "id": format!("{prefix}{i}"), "status": "SUCCESS" }),
                )
            })
            .collect();
        let txn = platform.db.begin().await.unwrap();
        platform.events.record(&txn, batch).await.unwrap();
        txn.commit().await.unwrap();
        platform.relay.notify();
        let now = Instant::now();
        for i in chunk {
            committed.insert(format!("{prefix}{i}"), now);
        }
    }
    committed
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let events: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000);
    let Some(mut stack) = common::Stack::start("notify").await else {
        return;
    };
    let w = stack.settings.sections.get_mut("webhooks").unwrap();
    w["allow_http"] = json!(true);
    w["allow_private_targets"] = json!(true);
    w["timeout_ms"] = json!(5000);
    let app = conveyor::app::Application::build(stack.settings.clone())
        .await
        .unwrap();
    let platform = app.platform().clone();
    let db = platform.db.clone();

    let arrivals = Arc::new(Arrivals::default());
    let receiver = axum::Router::new()
        .route("/hook/{n}", post(hook))
        .with_state(arrivals.clone());
    let (floor_url, stop_receiver) = common::serve(receiver).await;
    let base = floor_url.trim_end_matches("/floor").to_owned();
    let mut users = Vec::with_capacity(ENDPOINTS);
    for n in 0..ENDPOINTS {
        let (user, _) = conveyor::users::create(&db, &format!("tenant{n}"), 0, false)
            .await
            .unwrap();
        let new = NewEndpoint {
            url: format!("{base}/hook/{n}"),
            description: String::new(),
            event_types: Vec::new(),
        };
        endpoints::create(&db, &user.id, new, 10).await.unwrap();
        users.push(user.id);
    }
    let healthy = |i: usize| !slow(i % ENDPOINTS) && !failing(i % ENDPOINTS);
    let want = (0..events).filter(|i| healthy(*i)).count();

    let stop = tokio_util::sync::CancellationToken::new();
    let workers = {
        let (p, t) = (platform.clone(), stop.clone());
        tokio::spawn(async move {
            conveyor::app::run_workers(
                &p,
                conveyor::domains::ALL,
                Some(&["webhooks".to_owned()]),
                t,
            )
            .await
        })
    };
    // The state changes: 100 events a transaction, each committed before it is timed.
    let start = Instant::now();
    let committed = commit_events(&platform, &users, "e", events).await;
    let emitted = start.elapsed();
    let deadline = Instant::now() + Duration::from_secs(600);
    while arrivals.at.lock().unwrap().len() < want && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "{events} events for {ENDPOINTS} endpoints (10 slow at {} s an answer, 10 answering 500, 80 healthy); one consumer process, prefetch 128, 4 slots per endpoint",
        SLOW.as_secs()
    );
    report(
        "conveyor (outbox, RabbitMQ, signed)",
        &committed,
        &arrivals,
        start,
    );
    println!(
        "{:<34} the {events} state changes committed in {:.2} s ({:.0} events/s, 100 a transaction)",
        "",
        emitted.as_secs_f64(),
        events as f64 / emitted.as_secs_f64()
    );
    println!(
        "{:<34} {} answers of 500 so far (retried on the backoff)",
        "",
        arrivals
            .failed_answers
            .load(std::sync::atomic::Ordering::Relaxed)
    );
    stop.cancel();
    let _ = workers.await;

    // A backlog: the same number of events committed with no consumer running, then one
    // started: how fast the delivery side drains what waits.
    commit_events(&platform, &users, "b", events).await;
    // Relayed into the broker before the consumer starts.
    while platform.relay.relay_once().await.unwrap() > 0 {}
    arrivals.at.lock().unwrap().clear();
    let stop = tokio_util::sync::CancellationToken::new();
    let started = Instant::now();
    let workers = {
        let (p, t) = (platform.clone(), stop.clone());
        tokio::spawn(async move {
            conveyor::app::run_workers(
                &p,
                conveyor::domains::ALL,
                Some(&["webhooks".to_owned()]),
                t,
            )
            .await
        })
    };
    let deadline = Instant::now() + Duration::from_secs(600);
    while arrivals.at.lock().unwrap().len() < want && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let drained: HashMap<String, Instant> =
        (0..events).map(|i| (format!("b{i}"), started)).collect();
    report("conveyor, a backlog drained", &drained, &arrivals, started);
    stop.cancel();
    let _ = workers.await;

    // The floor: a plain client loop POSTing the same bodies, 128 at a time.
    for (name, only_healthy) in [
        ("plain loop, every endpoint", false),
        ("plain loop, healthy endpoints only", true),
    ] {
        arrivals.at.lock().unwrap().clear();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .pool_max_idle_per_host(CONCURRENCY)
            .build()
            .unwrap();
        let mut sent: HashMap<String, Instant> = HashMap::with_capacity(events);
        let start = Instant::now();
        let sent_at = Arc::new(Mutex::new(HashMap::with_capacity(events)));
        futures::stream::iter((0..events).filter(|i| !only_healthy || healthy(*i)))
            .map(|i| {
                let (client, base, sent_at) = (client.clone(), base.clone(), sent_at.clone());
                async move {
                    let body =
                        json!({ "type": "task.succeeded", "data": { "id": format!("e{i}") } })
                            .to_string();
                    sent_at
                        .lock()
                        .unwrap()
                        .insert(format!("e{i}"), Instant::now());
                    let _ = client
                        .post(format!("{base}/hook/{}", i % ENDPOINTS))
                        .header("content-type", "application/json")
                        .body(body)
                        .send()
                        .await;
                }
            })
            .buffer_unordered(CONCURRENCY)
            .collect::<Vec<()>>()
            .await;
        sent.extend(sent_at.lock().unwrap().drain());
        report(name, &sent, &arrivals, start);
    }
    stop_receiver.cancel();
    stack.teardown().await;
}
