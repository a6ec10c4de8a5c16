//! `POST /v1/tasks` throughput and latency at 50 and 200 concurrent clients, next to a
//! floor measured in the same run: a bare axum endpoint doing one insert-and-commit on
//! the same database at the same concurrency. Then end-to-end tasks/s for
//! zero-duration simulated tasks (submit → SUCCESS).
//!
//! Within a level, floor and conveyor take turns in three rounds of a third of the
//! requests each: this machine's speed drifts by up to 2x over minutes, and turns
//! give both the same mix of fast and slow spells.
//!
//! End to end on PostgreSQL it also prints what the database did per task:
//! transactions, statements (where `pg_stat_statements` is loaded) and rows written by
//! table — the per-task cost a feature on the task path adds shows there first.
//!
//! Right after the end-to-end figure, on the same broker, its peers run
//! (`common::peers`): a bare lapin no-op consumer, Celery's no-op
//! (`benches/peers/celery_noop.py`) and Dramatiq's no-op and one-INSERT actors
//! (`benches/peers/dramatiq_noop.py`), with the conveyor/peer ratio of each round; the
//! Python peers need the venv their scripts' docstrings install
//! (`/var/tmp/conveyor-celery`, or `BENCH_CELERY_PYTHON`).
//!
//! `CPU ms/req` is the machine's busy CPU time per request during a level (every
//! process: this one, the database, the broker); `bench`, `db` and `broker` are the
//! shares of this process (HTTP client and server), the database server(s) and
//! RabbitMQ, in ms per request. On a small machine the rate is CPU over CPU per request.
//!
//!     cargo bench --bench submit                 # embedded, PostgreSQL, MariaDB
//!     cargo bench --bench submit -- 2000 pg      # requests per level, backend filter
//!     BENCH_LEVELS=50,50,200 cargo bench --bench submit   # other client counts
//!     BENCH_LEVELS=0 cargo bench --bench submit -- 10000 pg  # end to end and peers only
//!     BENCH_LEVELS=0 BENCH_E2E_ROUNDS=3 cargo bench --bench submit -- 10000 pg  # 3 rounds, median ratios
//!     BENCH_TRACES=off cargo bench --bench submit -- 3000 pg   # with a service's logging
//!     BENCH_TRACES=http://127.0.0.1:9 cargo bench --bench submit -- 3000 pg  # and spans
//!                                   # exported to a dead collector (what tracing costs)

// Test and bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

// Measured with the allocator the `conveyor` binary ships with.
mod common;
#[path = "submit/end_to_end.rs"]
mod end_to_end;

use end_to_end::{end_to_end, knob};

use common::cpu::{Ticks, cpu_ticks, ms_per};
use common::floor_server;
use common::up;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::{Duration, Instant};

use conveyor::app::Application;
use conveyor::broker::settings::BrokerKind;
use conveyor::dedupe::settings::DedupeKind;
use conveyor::settings::Settings;
use sea_orm::{ColumnTrait, ConnectionTrait, Database, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct Level {
    rate: f64,
    p50: f64,
    p99: f64,
    /// Machine-wide CPU milliseconds per request (every process: this one, the
    /// database, the broker), and this process's share (HTTP client and server).
    cpu_ms: f64,
    own_cpu_ms: f64,
    db_cpu_ms: f64,
    broker_cpu_ms: f64,
}

impl Level {
    /// One level from several rounds: the machine's speed drifts over minutes (other
    /// tenants), so floor and conveyor take turns in short rounds and both see the same
    /// mix of fast and slow spells.
    fn from_rounds(rounds: Vec<Round>) -> Level {
        let secs: f64 = rounds.iter().map(|r| r.secs).sum();
        let mut ticks = Ticks::default();
        let mut all = Vec::new();
        for r in rounds {
            ticks.machine += r.ticks.machine;
            ticks.own += r.ticks.own;
            ticks.db += r.ticks.db;
            ticks.broker += r.ticks.broker;
            all.extend(r.latencies);
        }
        all.sort_by(|a, b| a.total_cmp(b));
        let pct = |p: f64| all[((all.len() - 1) as f64 * p) as usize];
        let per_req = |t: u64| t as f64 * 10.0 / all.len() as f64;
        Level {
            rate: all.len() as f64 / secs,
            p50: pct(0.5),
            p99: pct(0.99),
            cpu_ms: per_req(ticks.machine),
            own_cpu_ms: per_req(ticks.own),
            db_cpu_ms: per_req(ticks.db),
            broker_cpu_ms: per_req(ticks.broker),
        }
    }
}

/// One stretch of load: each request's latency (ms), the wall time, the CPU spent.
struct Round {
    latencies: Vec<f64>,
    secs: f64,
    ticks: Ticks,
}

/// `concurrency` clients; client i authenticates with `keys[i % keys.len()]` (none if empty).
async fn load(
    url: &str,
    keys: &[String],
    body: serde_json::Value,
    concurrency: usize,
    total: usize,
) -> Round {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .unwrap();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let cpu_before = cpu_ticks();
    let start = Instant::now();
    let workers = (0..concurrency).map(|i| {
        let key = (!keys.is_empty()).then(|| keys[i % keys.len()].clone());
        let (client, next, url, body) =
            (client.clone(), next.clone(), url.to_owned(), body.clone());
        tokio::spawn(async move {
            let mut lat = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < total {
                let t = Instant::now();
                let mut req = client.post(&url).json(&body);
                if let Some(k) = &key {
                    req = req.bearer_auth(k);
                }
                let r = req.send().await.expect("request");
                assert!(r.status().is_success(), "{}", r.status());
                lat.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            lat
        })
    });
    let latencies: Vec<f64> = futures::future::join_all(workers)
        .await
        .into_iter()
        .flat_map(|r| r.unwrap())
        .collect();
    Round {
        latencies,
        secs: start.elapsed().as_secs_f64(),
        ticks: cpu_ticks().since(cpu_before),
    }
}

/// Deletes the run's queues and exchanges (and the messages nobody consumed).
async fn teardown(settings: &Settings) {
    if settings.broker.kind == BrokerKind::Rabbitmq {
        let topology = conveyor::app::topology(settings, conveyor::domains::ALL);
        if let Ok(b) = conveyor::broker::connect(&settings.broker, topology).await {
            let _ = b.teardown().await;
            b.close().await;
        }
    }
}

const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432";

/// `s` on a scratch PostgreSQL database `name`, connected with `params`.
async fn on_scratch_pg(mut s: Settings, name: &str, params: &str) -> Settings {
    let url = scratch_db(PG_ADMIN, "postgres", name).await;
    s.database.url = format!("{url}?{params}");
    s
}

async fn scratch_db(admin: &str, admin_db: &str, name: &str) -> String {
    let conn = Database::connect(format!("{admin}/{admin_db}"))
        .await
        .unwrap();
    conn.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name}"))
        .await
        .unwrap();
    conn.execute_unprepared(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    format!("{admin}/{name}")
}

/// The group commit's cumulative counters from the server's /metrics: batches,
/// submissions in them, seconds spent committing.
async fn group_commit_totals(addr: std::net::SocketAddr) -> (f64, f64, f64) {
    let text = match reqwest::get(format!("http://{addr}/metrics")).await {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    };
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (
        value("conveyor_submit_batch_size_count"),
        value("conveyor_submit_batch_size_sum"),
        value("conveyor_submit_commit_seconds_sum"),
    )
}

/// Turns floor and conveyor take within a level (see [`Level::from_rounds`]).
const ROUNDS: usize = 3;

async fn bench(name: &str, mut settings: Settings, total: usize) {
    settings.server.port = 0;
    settings.log.level = "error".into();
    let floor_db = conveyor::db::connect(&settings.database).await.unwrap();
    let (floor_url, floor_stop) = floor_server(floor_db).await;

    let app = Application::build(settings.clone()).await.unwrap();
    let addr = app.addr();
    let db = app.platform().db.clone();
    // One user per client, as in production: clients of one user would all queue on
    // that user's balance row.
    let mut keys = Vec::new();
    for i in 0..200 {
        keys.push(
            conveyor::users::create(&db, &format!("bench{i}"), i64::MAX / 4, false)
                .await
                .unwrap()
                .1,
        );
    }
    let stop = CancellationToken::new();
    let server = tokio::spawn(app.run_until(stop.clone()));
    let url = format!("http://{addr}/v1/tasks");
    let body =
        json!({ "kind": "copywriting", "prompt": "a spring campaign for green tea, 15 seconds" });

    println!("\n[{name}] {total} requests per level");
    println!(
        "{:<34} {:>8} {:>7} {:>7} {:>12} {:>11} {:>10} {:>8} {:>6} {:>6}",
        "",
        "req/s",
        "p50 ms",
        "p99 ms",
        "x floor rate",
        "x floor p99",
        "CPU ms/req",
        "bench",
        "db",
        "broker"
    );
    // BENCH_LEVELS=50,50,200 repeats a level (the first one also pays warm-up:
    // statement preparation per connection, auto-analyze of the fresh tables).
    // BENCH_LEVELS=0 runs no level (only the end-to-end figure and the peers).
    let levels: Vec<usize> = match std::env::var("BENCH_LEVELS") {
        Ok(v) => v
            .split(',')
            .filter_map(|x| x.trim().parse().ok())
            .filter(|&n| n > 0)
            .collect(),
        Err(_) => vec![50, 200],
    };
    for concurrency in levels {
        let (mut floor, mut sub) = (Vec::new(), Vec::new());
        let before = group_commit_totals(addr).await;
        for _ in 0..ROUNDS {
            let n = total / ROUNDS;
            let floor_body = json!({ "prompt": "a spring campaign" });
            floor.push(load(&floor_url, &[], floor_body, concurrency, n).await);
            sub.push(load(&url, &keys, body.clone(), concurrency, n).await);
        }
        let (floor, sub) = (Level::from_rounds(floor), Level::from_rounds(sub));
        println!(
            "{:<34} {:>8.0} {:>7.1} {:>7.1} {:>12} {:>11} {:>10.3} {:>8.3} {:>6.3} {:>6.3}",
            format!("floor insert+commit @{concurrency}"),
            floor.rate,
            floor.p50,
            floor.p99,
            "",
            "",
            floor.cpu_ms,
            floor.own_cpu_ms,
            floor.db_cpu_ms,
            floor.broker_cpu_ms
        );
        println!(
            "{:<34} {:>8.0} {:>7.1} {:>7.1} {:>12.2} {:>11.2} {:>10.3} {:>8.3} {:>6.3} {:>6.3}",
            format!("POST /v1/tasks @{concurrency}"),
            sub.rate,
            sub.p50,
            sub.p99,
            sub.rate / floor.rate,
            sub.p99 / floor.p99,
            sub.cpu_ms,
            sub.own_cpu_ms,
            sub.db_cpu_ms,
            sub.broker_cpu_ms
        );
        let after = group_commit_totals(addr).await;
        let batches = (after.0 - before.0).max(1.0);
        println!(
            "{:<34} {:.0} batches: {:.1} submissions and {:.1} ms of commit each on average",
            "",
            batches,
            (after.1 - before.1) / batches,
            (after.2 - before.2) * 1000.0 / batches
        );
    }
    stop.cancel();
    let _ = server.await;
    floor_stop.cancel();
    teardown(&settings).await;
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    // BENCH_TRACES: `off` logs as a service does (warnings) with no traces; a URL also
    // exports every span to that OTLP/HTTP endpoint. Unset: no subscriber at all.
    if let Ok(to) = std::env::var("BENCH_TRACES") {
        let log = conveyor::telemetry::settings::LogSettings {
            format: conveyor::telemetry::settings::LogFormat::Json,
            level: "warn".into(),
        };
        let traces = conveyor::traces::TraceSettings {
            otlp_endpoint: if to == "off" {
                String::new()
            } else {
                to.clone()
            },
            ..Default::default()
        };
        conveyor::telemetry::init(
            &log,
            conveyor::telemetry::LogTo::Stderr,
            Some((&traces, "bench")),
        );
        println!(
            "[traces] {}",
            if conveyor::traces::on() { &to } else { "off" }
        );
    }
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let total: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(3000);
    let filter = args.get(1).cloned().unwrap_or_default();
    let dir = tempfile::tempdir().unwrap();
    let pid = std::process::id();
    let base = |tag: &str| {
        let mut s = Settings::load_from(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/config")),
            "local",
            // CONVEYOR__… variables tune the runs (e.g. CONVEYOR__DATABASE__GROUP_COMMIT_WRITERS).
            std::env::vars(),
        )
        .unwrap();
        // The platform's throughput, not one tenant's budget.
        s.limits =
            conveyor::limits::declared::unlimited(&conveyor::app::limits(conveyor::domains::ALL));
        s.broker.namespace = format!("bench{pid}{tag}");
        s.dedupe.key_prefix = s.broker.namespace.clone();
        s.broker.embedded_path = dir.path().join(format!("{tag}-broker.sqlite"));
        s.storage.root = dir
            .path()
            .join(format!("{tag}-objects"))
            .display()
            .to_string();
        s.database.url = format!(
            "sqlite://{}?mode=rwc",
            dir.path().join(format!("{tag}.sqlite")).display()
        );
        s
    };
    let real = |mut s: Settings| {
        s.broker.kind = BrokerKind::Rabbitmq;
        s.dedupe.kind = DedupeKind::Redis;
        s.database.max_connections = 32;
        s
    };
    let wanted = |n: &str| filter.is_empty() || n.contains(&filter);
    let e2e_rounds: usize = knob("BENCH_E2E_ROUNDS").unwrap_or(1).max(1);
    if wanted("embedded") {
        bench("embedded (SQLite, in-process broker)", base("se"), total).await;
        end_to_end("embedded", base("ee"), total, false).await;
    }
    let rabbit = up("127.0.0.1:5672").await && up("127.0.0.1:6379").await;
    // Connection parameters of the PostgreSQL runs. Debian's server has TLS on (a
    // snakeoil certificate) and sqlx prefers it, which encrypts every statement over
    // loopback; the compose deployment's server (the postgres image) has it off. The
    // default matches the deployment; BENCH_PG_PARAMS=sslmode=prefer measures with TLS.
    let pg_params = std::env::var("BENCH_PG_PARAMS").unwrap_or_else(|_| "sslmode=disable".into());
    println!("[PostgreSQL] connection parameters: {pg_params}");
    if rabbit && wanted("pg") && up("127.0.0.1:5432").await {
        let s = on_scratch_pg(real(base("sp")), &format!("bench{pid}sp"), &pg_params).await;
        bench("PostgreSQL + RabbitMQ + Redis", s, total).await;
        // BENCH_E2E_ROUNDS=N: N rounds of conveyor then its peers (common::peers), each
        // on a database of its own, and the conveyor/peer ratios of each round: this
        // machine's speed drifts by a quarter between runs, a single pair says little.
        let mut ratios = common::peers::Ratios::default();
        for round in 0..e2e_rounds {
            let tag = format!("ep{round}");
            let s = on_scratch_pg(real(base(&tag)), &format!("bench{pid}{tag}"), &pg_params).await;
            let rate = end_to_end("PostgreSQL + RabbitMQ + Redis", s, total, true).await;
            let peers = common::peers::run(total, PG_ADMIN, &pg_params).await;
            ratios.push(rate, &peers);
        }
        ratios.summary();
    }
    if rabbit && wanted("mariadb") && up("127.0.0.1:3306").await {
        let mut s = real(base("sm"));
        s.database.url = scratch_db(
            "mysql://root@127.0.0.1:3306",
            "test",
            &format!("bench{pid}sm"),
        )
        .await;
        bench("MariaDB + RabbitMQ + Redis", s, total).await;
    }
    // The scratch databases this run created.
    let mut pg_tags = vec!["sp".to_owned()];
    pg_tags.extend((0..e2e_rounds).map(|r| format!("ep{r}")));
    // PostgreSQL refuses to drop a database with sessions open (the platforms' pools may
    // still hold some): `WITH (FORCE)` ends them (PostgreSQL 13+).
    for (admin, admin_db, tags, force) in [
        (PG_ADMIN, "postgres", pg_tags, " WITH (FORCE)"),
        (
            "mysql://root@127.0.0.1:3306",
            "test",
            vec!["sm".to_owned()],
            "",
        ),
    ] {
        if let Ok(conn) = Database::connect(format!("{admin}/{admin_db}")).await {
            for tag in tags {
                let _ = conn
                    .execute_unprepared(&format!("DROP DATABASE IF EXISTS bench{pid}{tag}{force}"))
                    .await;
            }
        }
    }
}
