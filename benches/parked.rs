//! Parked provider jobs at scale (issue 35): 10,000 video tasks at a prediction API
//! that takes an hour, parked across two consumer processes whose long queue has 4
//! prefetch slots each (8 in all: every job parked gives its slot back, or 8 would be
//! all that ever started). Then, once every job is on the 60 s step of its backoff, the
//! cost of the checks in a window of steady state: checks, statements and transactions,
//! broker messages, CPU, per parked job per minute, and how late each check came. And
//! copywriting tasks (zero-length steps) submitted with and without the parked jobs
//! beside them: the end-to-end rate should not move.
//!
//!     cargo bench --bench parked              # needs scripts/services.sh up
//!     cargo bench --bench parked -- 2000      # parked jobs (10,000 by default)
//!     PARKED_WINDOW_SECS=120 cargo bench --bench parked

// Bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

#[path = "common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Path, State};
use axum::routing::{get, post};
use conveyor::domains::ai_tasks::entity::{event, task};
use conveyor::domains::ai_tasks::kinds::Status;
use conveyor::settings::Settings;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter,
};
use serde_json::{Value, json};

use common::cpu::cpu_ticks;

/// The provider's jobs run this long: none ends during the bench.
const JOB_SECS: f64 = 3600.0;
/// Copywriting tasks per rate measurement.
const COPY: usize = 2000;

/// A prediction API whose jobs take an hour; what it was asked, when.
#[derive(Default)]
struct Fake {
    created: Mutex<HashMap<String, Instant>>,
    gets: AtomicU64,
    /// Per job, when it was last read (to time the checks' spacing).
    last: Mutex<HashMap<String, Instant>>,
    /// The spacing of consecutive checks of one job, while recording.
    spacing: Mutex<Vec<f64>>,
    recording: std::sync::atomic::AtomicBool,
}

async fn create(State(fake): State<Arc<Fake>>) -> (axum::http::StatusCode, Json<Value>) {
    let id = uuid::Uuid::new_v4().simple().to_string();
    fake.created
        .lock()
        .unwrap()
        .insert(id.clone(), Instant::now());
    (
        axum::http::StatusCode::CREATED,
        Json(json!({ "id": id, "status": "starting" })),
    )
}

async fn read(State(fake): State<Arc<Fake>>, Path(id): Path<String>) -> Json<Value> {
    fake.gets.fetch_add(1, Ordering::Relaxed);
    let now = Instant::now();
    let started = fake
        .created
        .lock()
        .unwrap()
        .get(&id)
        .copied()
        .unwrap_or(now);
    let before = fake.last.lock().unwrap().insert(id.clone(), now);
    if let Some(b) = before
        && fake.recording.load(Ordering::Relaxed)
    {
        fake.spacing.lock().unwrap().push((now - b).as_secs_f64());
    }
    // A progress bar that moves a little between checks a minute apart.
    let pct = ((now - started).as_secs_f64() / JOB_SECS * 100.0) as u32;
    Json(json!({ "id": id, "status": "processing", "logs": format!("{pct}%|###| {pct}/100") }))
}

async fn fake() -> (String, Arc<Fake>) {
    let fake = Arc::new(Fake::default());
    let app = axum::Router::new()
        .route("/v1/predictions", post(create))
        .route("/v1/predictions/{id}", get(read))
        .route("/v1/predictions/{id}/cancel", post(|| async { "{}" }))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, fake)
}

/// Submits `n` tasks of `kind` over 32 connections; the ids.
async fn submit(url: &str, key: &str, kind: &str, n: usize) -> Vec<String> {
    let client = reqwest::Client::new();
    let ids = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let next = Arc::new(AtomicU64::new(0));
    let workers = (0..32).map(|_| {
        let (client, url, key, ids, next) = (
            client.clone(),
            url.to_owned(),
            key.to_owned(),
            ids.clone(),
            next.clone(),
        );
        let kind = kind.to_owned();
        tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < n as u64 {
                let r = client
                    .post(&url)
                    .bearer_auth(&key)
                    .json(&json!({ "kind": kind, "prompt": "a slow shot of the sea" }))
                    .send()
                    .await
                    .unwrap();
                let v: Value = r.json().await.unwrap();
                ids.lock()
                    .unwrap()
                    .push(v["id"].as_str().unwrap().to_owned());
            }
        })
    });
    futures::future::join_all(workers).await;
    Arc::try_unwrap(ids).unwrap().into_inner().unwrap()
}

async fn count(db: &DatabaseConnection, kind: &str, status: Status) -> u64 {
    task::Entity::find()
        .filter(task::Column::Kind.eq(kind))
        .filter(task::Column::Status.eq(status))
        .count(db)
        .await
        .unwrap()
}

/// Copywriting tasks end to end: submitted, all SUCCESS; tasks/s.
async fn copywriting_rate(url: &str, key: &str, db: &DatabaseConnection) -> f64 {
    let before = count(db, "copywriting", Status::Success).await;
    let start = Instant::now();
    submit(url, key, "copywriting", COPY).await;
    while count(db, "copywriting", Status::Success).await < before + COPY as u64 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    COPY as f64 / start.elapsed().as_secs_f64()
}

/// Committed transactions of the bench's database so far.
async fn transactions(db: &DatabaseConnection) -> i64 {
    let row = db
        .query_one_raw(sea_orm::Statement::from_string(
            db.get_database_backend(),
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index::<i64>(0).unwrap()
}

/// What a window cost: statements, transactions, checks, progress events, CPU ms.
struct Cost {
    secs: f64,
    statements: u64,
    transactions: i64,
    checks: u64,
    events: u64,
    cpu_ms: f64,
}

async fn measure(db: &DatabaseConnection, fake: &Fake, secs: u64) -> Cost {
    let (s0, t0, g0, c0) = (
        conveyor::db::statements_run(),
        transactions(db).await,
        fake.gets.load(Ordering::Relaxed),
        cpu_ticks(),
    );
    let from = chrono::Utc::now();
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let elapsed = start.elapsed().as_secs_f64();
    let ticks = cpu_ticks().since(c0);
    let events = event::Entity::find()
        .filter(event::Column::CreatedAt.gte(from))
        .count(db)
        .await
        .unwrap();
    Cost {
        secs: elapsed,
        statements: conveyor::db::statements_run() - s0,
        transactions: transactions(db).await - t0,
        checks: fake.gets.load(Ordering::Relaxed) - g0,
        events,
        cpu_ms: ticks.machine as f64 * 10.0,
    }
}

fn settings(stack: &Settings, provider: &str) -> Settings {
    let mut s = stack.clone();
    let ai = s.sections.get_mut("ai").unwrap();
    ai["providers"]["replicate"]["base_url"] = json!(provider);
    ai["providers"]["replicate"]["model"] = json!("bench-version");
    ai["providers"]["replicate"]["api_key"] = json!("r8-bench");
    // Checks are requests too: room for the fleet's 167/s.
    ai["providers"]["replicate"]["requests_per_second"] = json!(2000);
    ai["kinds"]["video"]["provider"] = json!("replicate");
    ai["kinds"]["video"]["deadline_secs"] = json!(3 * 3600);
    ai["kinds"]["video"]["cost"] = json!(0);
    ai["kinds"]["copywriting"]["simulated_step_ms"] = json!(0);
    ai["kinds"]["copywriting"]["cost"] = json!(0);
    s
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("parked: run with `cargo bench --bench parked`");
        return;
    }
    common::raise_file_limit();
    let parked: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(10_000);
    let window: u64 = std::env::var("PARKED_WINDOW_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let Some(stack) = common::Stack::start("parked").await else {
        return;
    };
    let (provider, fake) = fake().await;
    let s = settings(&stack.settings, &provider);
    let app = common::TwoConsumers::start(&s).await;
    let url = format!("{}/v1/tasks", app.base);
    let (db, key) = (app.db.clone(), app.key.clone());

    let idle = measure(&db, &fake, 10).await;
    let idle_per_sec = idle.statements as f64 / idle.secs;
    let alone = copywriting_rate(&url, &key, &db).await;
    println!("copywriting alone: {alone:.0} tasks/s ({COPY} tasks, zero-length steps)");

    let started = Instant::now();
    submit(&url, &key, "video", parked).await;
    loop {
        let waiting = count(&db, "video", Status::Waiting).await;
        if waiting as usize >= parked {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(900),
            "only {waiting} parked"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let park_secs = started.elapsed().as_secs_f64();
    println!(
        "parked {parked} jobs in {park_secs:.1} s ({:.0}/s) through 2 processes x 4 long-queue slots: none holds a slot",
        parked as f64 / park_secs
    );
    // Every job past its first four checks (2 + 5 + 15 + 30 s): on the 60 s step.
    let settle = Duration::from_secs(55)
        .saturating_sub(started.elapsed() - Duration::from_secs_f64(park_secs));
    tokio::time::sleep(settle + Duration::from_secs(60)).await;
    fake.recording.store(true, Ordering::Relaxed);
    let c = measure(&db, &fake, window).await;
    fake.recording.store(false, Ordering::Relaxed);
    let minutes = c.secs / 60.0;
    let per_job_min = |x: f64| x / parked as f64 / minutes;
    let net_statements = c.statements as f64 - idle_per_sec * c.secs;
    println!(
        "steady state, {:.0} s: {} checks ({:.1}/s), {:.2} checks per parked job per minute",
        c.secs,
        c.checks,
        c.checks as f64 / c.secs,
        per_job_min(c.checks as f64)
    );
    println!(
        "  database: {:.2} statements per check ({:.2} per parked job per minute; idle platform {idle_per_sec:.1}/s taken out), {:.2} transactions per check",
        net_statements / c.checks.max(1) as f64,
        per_job_min(net_statements),
        c.transactions as f64 / c.checks.max(1) as f64,
    );
    println!(
        "  broker: {:.2} messages per check (the next check's publish and delivery, {:.2} progress events), {:.2} per parked job per minute",
        2.0 + c.events as f64 / c.checks.max(1) as f64,
        c.events as f64 / c.checks.max(1) as f64,
        per_job_min(2.0 * c.checks as f64 + c.events as f64)
    );
    println!(
        "  CPU (machine, every process): {:.2} ms per check, {:.1} % of one core",
        c.cpu_ms / c.checks.max(1) as f64,
        c.cpu_ms / c.secs / 10.0
    );
    let mut spacing = fake.spacing.lock().unwrap().clone();
    spacing.sort_by(f64::total_cmp);
    if !spacing.is_empty() {
        let pct = |p: f64| spacing[((spacing.len() - 1) as f64 * p) as usize];
        println!(
            "  spacing of one job's checks: p50 {:.2} s, p99 {:.2} s, max {:.2} s (the schedule says 60)",
            pct(0.5),
            pct(0.99),
            spacing[spacing.len() - 1]
        );
    }
    let beside = copywriting_rate(&url, &key, &db).await;
    println!(
        "copywriting beside {parked} parked jobs: {beside:.0} tasks/s ({:.0} % of alone)",
        beside / alone * 100.0
    );
    app.stop().await;
    stack.teardown().await;
}
