//! Delivery-core throughput: N small messages published with confirms, consumed,
//! deduplicated and acked, end to end, against a raw lapin baseline in the same run.
//!
//!     cargo bench --bench delivery                  # all variants, 20,000 messages
//!     cargo bench --bench delivery -- 50000 embedded # N and a filter on variant names
//!
//! Variants: `raw-lapin` (persistent + confirms + manual ack, same prefetch: the
//! practical limit; run first and again after the others, ratios are against the mean
//! of the two), `core-rabbit` (conveyor's consume loop, `consumer::run::serve`:
//! envelope, Redis claim/complete, ack), `core-rabbit+fence-pg` /
//! `core-rabbit+fence-mariadb` (plus the database fence: the real per-message work), and
//! the same on the embedded backends; each one message per handler call, then with a
//! batch handler (`… batch64`; `BENCH_BATCH=N` to change) where claims, fence rows and
//! acks go per batch. `BENCH_PREFETCH` (default 256) sets every variant's prefetch. Real
//! services are skipped with a note when unreachable.
//!
//!     cargo bench --bench delivery -- 20000 cluster  # on a 3-node cluster it starts
//!
//! `cluster` variants start a local 3-node RabbitMQ cluster (scripts/rabbitmq-cluster,
//! AMQP on 5701–5703 unless `BENCH_CLUSTER_PORT0`), stopped at the end: `raw-lapin-cluster`
//! (a quorum queue, publisher and consumer on node a) against `cluster-core` and
//! `cluster-core+fence-pg` (conveyor with quorum queues and `broker.urls`, first node a).

// Test and bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

#[path = "../tests/support/cluster.rs"]
mod cluster;
mod common;

// Measured with the allocator the `conveyor` binary ships with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::cpu::{Ticks, cpu_ticks, ms_per};
use common::lapin::now_us;
use common::up;
use conveyor::broker::settings::BrokerKind;
use conveyor::broker::settings::QueueOverride;
use conveyor::broker::{Envelope, Outgoing, Target};
use conveyor::consumer::{BatchHandler, Context, Handler, HandlerError, Worker};
use conveyor::dedupe::settings::DedupeKind;
use conveyor::domains::ai_tasks::queues::AI_SHORT;
use conveyor::settings::Settings;
use sea_orm::{ConnectionTrait, Database};
use tokio_util::sync::CancellationToken;

/// The consumers' prefetch, the same for every variant (`BENCH_PREFETCH` to change).
fn prefetch() -> u16 {
    std::env::var("BENCH_PREFETCH")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(256)
}
const PUBLISH_WINDOW: usize = 500;
/// The raw baseline's second run, after the single-node variants.
const RAW_AGAIN: &str = "raw-lapin (again)";
const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

struct Report {
    name: String,
    n: usize,
    elapsed: Duration,
    latencies_us: Vec<u64>,
    /// CPU spent during the run, by process.
    ticks: Ticks,
}

impl Report {
    fn rate(&self) -> f64 {
        self.n as f64 / self.elapsed.as_secs_f64()
    }
    fn pct(&self, p: f64) -> f64 {
        let mut v = self.latencies_us.clone();
        v.sort_unstable();
        if v.is_empty() {
            return 0.0;
        }
        v[((v.len() - 1) as f64 * p) as usize] as f64 / 1000.0
    }
}

/// The bare lapin no-op on `amqp` (a quorum queue when `quorum`).
async fn raw_lapin(name: &str, amqp: &str, quorum: bool, n: usize) -> anyhow::Result<Report> {
    let run = common::lapin::noop(amqp, n, prefetch(), PUBLISH_WINDOW, quorum).await?;
    Ok(Report {
        name: name.into(),
        n,
        elapsed: run.elapsed,
        latencies_us: run.latencies_us,
        ticks: run.ticks,
    })
}

/// Counts handled messages and their latency; cancels the consumer once `n` are done.
struct Counter {
    n: usize,
    done: AtomicUsize,
    lat: std::sync::Mutex<Vec<u64>>,
    stop: CancellationToken,
}

impl Counter {
    fn handled(&self, messages: &[Envelope]) {
        let now = now_us();
        if let Ok(mut lat) = self.lat.lock() {
            lat.extend(
                messages
                    .iter()
                    .map(|m| now.saturating_sub(m.created_at.timestamp_micros() as u64)),
            );
        }
        if self.done.fetch_add(messages.len(), Ordering::Relaxed) + messages.len() >= self.n {
            self.stop.cancel();
        }
    }
}

#[async_trait]
impl Handler for Counter {
    async fn handle(&self, _: &Context, m: &Envelope) -> Result<(), HandlerError> {
        self.handled(std::slice::from_ref(m));
        Ok(())
    }
}

#[async_trait]
impl BatchHandler for Counter {
    async fn handle_batch(&self, _: &Context, m: &[Envelope]) -> Vec<Result<(), HandlerError>> {
        self.handled(m);
        m.iter().map(|_| Ok(())).collect()
    }
}

/// Publishes `n` envelopes in confirmed windows while `consumer::run::serve` consumes
/// them with a no-op handler: one message per call (`batch` = 1), or batches of `batch`
/// (claims, fence rows and acks per batch). The run ends when the consumer has drained
/// (every message settled).
async fn core(name: &str, mut settings: Settings, n: usize, batch: u16) -> anyhow::Result<Report> {
    settings.queues.insert(
        "ai.short".into(),
        QueueOverride {
            prefetch: Some(prefetch()),
            batch: Some(batch),
            linger_ms: Some(5),
            ..Default::default()
        },
    );
    let platform = conveyor::app::platform(settings).await?;
    let deps = platform.consumer_deps();
    let counter = Arc::new(Counter {
        n,
        done: AtomicUsize::new(0),
        lat: std::sync::Mutex::new(Vec::with_capacity(n)),
        stop: CancellationToken::new(),
    });
    let worker = if batch > 1 {
        Worker::Batch(counter.clone())
    } else {
        Worker::One(counter.clone())
    };
    let start = Instant::now();
    let before = cpu_ticks();
    let consume = tokio::spawn(conveyor::consumer::run::serve(
        deps,
        &AI_SHORT,
        worker,
        counter.stop.clone(),
    ));
    let mut sent = 0;
    while sent < n {
        let batch: Vec<Outgoing> = (0..PUBLISH_WINDOW.min(n - sent))
            .map(|i| {
                Outgoing::new(
                    Target::Queue(&AI_SHORT),
                    &Envelope::new("bench", serde_json::json!({ "i": sent + i })),
                    65536,
                )
            })
            .collect::<Result<_, _>>()?;
        sent += batch.len();
        platform.broker.publish_batch(&batch).await?;
    }
    consume.await??;
    let elapsed = start.elapsed();
    let ticks = cpu_ticks().since(before);
    let done = counter.done.load(Ordering::Relaxed);
    anyhow::ensure!(done >= n, "only {done} of {n} handled");
    let work = platform.broker.topology().queue(&AI_SHORT).name;
    let left = platform.broker.depth(&work).await.unwrap_or(0);
    anyhow::ensure!(left == 0, "{left} messages left in the queue");
    let latencies_us = std::mem::take(&mut *counter.lat.lock().unwrap());
    platform.broker.teardown().await.ok();
    platform.broker.close().await;
    if platform.settings.dedupe.kind == DedupeKind::Redis {
        forget_keys(
            &platform.settings.dedupe.url,
            &platform.settings.dedupe.key_prefix,
        )
        .await;
    }
    Ok(Report {
        name: name.into(),
        n,
        elapsed,
        latencies_us,
        ticks,
    })
}

/// Deletes this run's dedupe keys (never FLUSHDB: the server is shared).
async fn forget_keys(url: &str, prefix: &str) {
    let Ok(client) = redis::Client::open(url) else {
        return;
    };
    let Ok(mut c) = client.get_multiplexed_async_connection().await else {
        return;
    };
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut c)
        .await
        .unwrap_or_default();
    for chunk in keys.chunks(1000) {
        let _: Result<i64, _> = redis::cmd("DEL").arg(chunk).query_async(&mut c).await;
    }
}

fn base_settings(dir: &std::path::Path, tag: &str) -> anyhow::Result<Settings> {
    let mut s = Settings::load_from(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/config")),
        "test",
        Vec::new(),
    )?;
    let ns = format!("bench{}{tag}", std::process::id());
    s.broker.namespace = ns.clone();
    s.dedupe.key_prefix = ns;
    s.broker.embedded_path = dir.join(format!("{tag}-broker.sqlite"));
    s.storage.root = dir.join(format!("{tag}-objects")).display().to_string();
    s.database.url = format!(
        "sqlite://{}?mode=rwc",
        dir.join(format!("{tag}.sqlite")).display()
    );
    s.consumer.db_fence = false;
    Ok(s)
}

fn real(mut s: Settings) -> Settings {
    s.broker.kind = BrokerKind::Rabbitmq;
    s.broker.url = AMQP.into();
    s.dedupe.kind = DedupeKind::Redis;
    s
}

async fn scratch_db(admin: &str, admin_db: &str, name: &str) -> anyhow::Result<String> {
    let conn = Database::connect(format!("{admin}/{admin_db}")).await?;
    conn.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name}"))
        .await?;
    conn.execute_unprepared(&format!("CREATE DATABASE {name}"))
        .await?;
    Ok(format!("{admin}/{name}"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let filter = args.get(1).cloned().unwrap_or_default();
    let dir = tempfile::tempdir()?;
    let rabbit = up("127.0.0.1:5672").await && up("127.0.0.1:6379").await;
    let mut reports = Vec::new();
    let wanted = |name: &str| filter.is_empty() || name.contains(&filter);

    if rabbit && (wanted("raw-lapin") || wanted("core-rabbit")) {
        reports.push(raw_lapin("raw-lapin", AMQP, false, n).await?);
    }
    // Each variant one message per handler call, then in batches (claims, fence rows
    // and acks per batch: the consumer runtime's batch path).
    let batch: u16 = std::env::var("BENCH_BATCH")
        .ok()
        .and_then(|b| b.parse().ok())
        .unwrap_or(64);
    let label = |base: &str, b: u16| {
        if b > 1 {
            format!("{base} batch{b}")
        } else {
            base.to_owned()
        }
    };
    let pid = std::process::id();
    let mut scratch = Vec::new();
    for b in [1, batch] {
        if rabbit && wanted("core-rabbit") {
            let s = real(base_settings(dir.path(), &format!("r{b}"))?);
            reports.push(core(&label("core-rabbit", b), s, n, b).await?);
            for (db, admin, admin_db, addr) in [
                (
                    "pg",
                    "postgres://postgres@127.0.0.1:5432",
                    "postgres",
                    "127.0.0.1:5432",
                ),
                (
                    "mariadb",
                    "mysql://root@127.0.0.1:3306",
                    "test",
                    "127.0.0.1:3306",
                ),
            ] {
                if !up(addr).await {
                    println!("note: {addr} unreachable; the {db} fence variant skipped");
                    continue;
                }
                let name = format!("bench{pid}{db}{b}");
                let mut s = real(base_settings(dir.path(), &format!("r{db}{b}"))?);
                s.database.url = scratch_db(admin, admin_db, &name).await?;
                scratch.push((admin, admin_db, name));
                s.consumer.db_fence = true;
                reports.push(core(&label(&format!("core-rabbit+fence-{db}"), b), s, n, b).await?);
            }
        }
        if wanted("embedded") {
            let s = base_settings(dir.path(), &format!("e{b}"))?;
            reports.push(core(&label("core-embedded", b), s, n, b).await?);
            let mut s = base_settings(dir.path(), &format!("ef{b}"))?;
            s.consumer.db_fence = true;
            reports.push(core(&label("core-embedded+fence-sqlite", b), s, n, b).await?);
        }
    }
    // The machine drifts by a fifth between runs: the baseline is measured again after
    // the variants, and each ratio is against the mean of the two raw runs.
    if rabbit && (wanted("raw-lapin") || wanted("core-rabbit")) {
        reports.push(raw_lapin(RAW_AGAIN, AMQP, false, n).await?);
    }
    if rabbit && filter.contains("cluster") {
        let c = cluster::Cluster::start("bench", "BENCH_CLUSTER_PORT0", 5700);
        let urls = c.urls();
        reports.push(raw_lapin("raw-lapin-cluster", &urls[0], true, n).await?);
        let on_cluster = |mut s: Settings| {
            s.broker.urls = urls.clone();
            s.broker.queue_type = conveyor::broker::settings::QueueType::Quorum;
            s
        };
        for b in [1, batch] {
            let s = on_cluster(real(base_settings(dir.path(), &format!("c{b}"))?));
            reports.push(core(&label("cluster-core", b), s, n, b).await?);
        }
        if up("127.0.0.1:5432").await {
            let name = format!("bench{pid}clpg");
            let admin = "postgres://postgres@127.0.0.1:5432";
            let mut s = on_cluster(real(base_settings(dir.path(), "cpg")?));
            s.database.url = scratch_db(admin, "postgres", &name).await?;
            scratch.push((admin, "postgres", name));
            s.consumer.db_fence = true;
            reports.push(core(&label("cluster-core+fence-pg", batch), s, n, batch).await?);
        }
        drop(c);
    }
    if !rabbit {
        println!("note: RabbitMQ or Redis unreachable; real-service variants skipped");
    }
    for (admin, admin_db, name) in scratch {
        if let Ok(conn) = Database::connect(format!("{admin}/{admin_db}")).await {
            let _ = conn
                .execute_unprepared(&format!("DROP DATABASE IF EXISTS {name}"))
                .await;
        }
    }

    // Each variant against the raw baseline of its own broker (one node, or the cluster).
    let raw_of = |names: &[&str]| {
        let rates: Vec<f64> = reports
            .iter()
            .filter(|r| names.contains(&r.name.as_str()))
            .map(Report::rate)
            .collect();
        (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64)
    };
    let (raw, raw_cluster) = (
        raw_of(&["raw-lapin", RAW_AGAIN]),
        raw_of(&["raw-lapin-cluster"]),
    );
    println!(
        "\n{n} messages, prefetch {}, publish window {PUBLISH_WINDOW}, persistent + confirms + manual ack",
        prefetch()
    );
    println!(
        "CPU: ms of CPU per 1,000 messages (machine: every process; own: this bench, publisher and consumer)"
    );
    println!(
        "{:<36} {:>8} {:>8} {:>8} {:>6} | {:>7} {:>6} {:>6} {:>6} {:>6}",
        "variant", "msgs/s", "p50 ms", "p99 ms", "x raw", "machine", "own", "rabbit", "redis", "db"
    );
    for r in &reports {
        let base = if r.name.contains("cluster") {
            raw_cluster
        } else {
            raw
        };
        let ratio = base
            .map(|raw| format!("{:.2}", r.rate() / raw))
            .unwrap_or_else(|| "-".into());
        let cpu = |t: u64| ms_per(t, r.n, 1000);
        println!(
            "{:<36} {:>8.0} {:>8.1} {:>8.1} {:>6} | {:>7.0} {:>6.0} {:>6.0} {:>6.0} {:>6.0}",
            r.name,
            r.rate(),
            r.pct(0.5),
            r.pct(0.99),
            ratio,
            cpu(r.ticks.machine),
            cpu(r.ticks.own),
            cpu(r.ticks.broker),
            cpu(r.ticks.redis),
            cpu(r.ticks.db),
        );
    }
    Ok(())
}
