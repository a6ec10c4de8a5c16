//! Delivery-core throughput: N small messages published with confirms, consumed,
//! deduplicated and acked, end to end, against two baselines in the same run: a raw
//! lapin client and RabbitMQ's own PerfTest doing the same work.
//!
//!     cargo bench --bench delivery                  # all variants, 20,000 messages
//!     cargo bench --bench delivery -- 50000 embedded # N and a filter on variant names
//!
//! Variants: `raw-lapin` (persistent + confirms + manual ack, same prefetch: the
//! practical limit), `perftest` (RabbitMQ's PerfTest, the tool behind RabbitMQ's
//! published figures, on the same workload: one producer, one consumer, 200-byte
//! persistent messages, confirms `-c` = the publish window, per-message acks, `-q` = the
//! prefetch; see benches/common/perftest.rs; skipped with a note unless installed by
//! `tools/perftest/install.sh`), `core-rabbit` (conveyor's consume loop,
//! `consumer::run::serve`: envelope, Redis claim/complete, ack), `core-rabbit+fence-pg` /
//! `core-rabbit+fence-mariadb` (plus the database fence: the real per-message work), and
//! the same on the embedded backends; each one message per handler call, then with a
//! batch handler (`… batch64`; `BENCH_BATCH=N` to change) where claims, fence rows and
//! acks go per batch. Both baselines run first and again after the others (the cluster's
//! once); each ratio (`x raw`, `x pt`) is against the mean of a baseline's runs on the
//! same broker and queue type. `BENCH_PREFETCH` (default 256) sets every variant's
//! prefetch. Real services are skipped with a note when unreachable.
//!
//!     cargo bench --bench delivery -- 20000 quorum   # quorum queues on the local node
//!     cargo bench --bench delivery -- 20000 cluster  # on a 3-node cluster it starts
//!
//! The `quorum` and `cluster` sets run only when named. `quorum`: `raw-lapin-quorum`,
//! `perftest-quorum` (`--quorum-queue`), `quorum-core` and `quorum-core+fence-pg`, one by
//! one and in batches, all on quorum queues of the local node (`broker.queue_type`).
//! `cluster` starts a local 3-node RabbitMQ cluster (scripts/rabbitmq-cluster, AMQP on
//! 5701–5703 unless `BENCH_CLUSTER_PORT0`), stopped at the end: `raw-lapin-cluster` and
//! `perftest-cluster` (a quorum queue, publisher and consumer on node a) against
//! `cluster-core` and `cluster-core+fence-pg` (conveyor with quorum queues and
//! `broker.urls`, first node a).

// Test and bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

#[path = "../tests/support/cluster.rs"]
mod cluster;
mod common;
#[path = "delivery/consume.rs"]
mod consume;
#[path = "delivery/report.rs"]
mod report;

// Measured with the allocator the `conveyor` binary ships with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use common::up;
use consume::core;
use conveyor::broker::settings::{BrokerKind, QueueType};
use conveyor::dedupe::settings::DedupeKind;
use conveyor::settings::Settings;
use report::{Kind, Report, Set};
use sea_orm::{ConnectionTrait, Database};

/// The consumers' prefetch, the same for every variant (`BENCH_PREFETCH` to change).
fn prefetch() -> u16 {
    std::env::var("BENCH_PREFETCH")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(256)
}
const PUBLISH_WINDOW: usize = 500;
/// The body size of the baselines (what `common::lapin::noop` publishes; conveyor's
/// envelopes here are smaller, ~140 bytes).
const MESSAGE_BYTES: usize = 200;
const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// Both baselines on `amqp` (a quorum queue when `quorum`): the bare lapin no-op, then
/// PerfTest when installed. Named `raw-lapin{suffix}` and `perftest{suffix}`.
async fn baselines(
    reports: &mut Vec<Report>,
    set: Set,
    suffix: &str,
    amqp: &str,
    quorum: bool,
    n: usize,
) -> anyhow::Result<()> {
    let run = common::lapin::noop(amqp, n, prefetch(), PUBLISH_WINDOW, quorum).await?;
    let name = format!("raw-lapin{suffix}");
    let (elapsed, lat) = (run.elapsed, run.latencies_us);
    reports.push(Report::measured(
        &name,
        set,
        Kind::RawLapin,
        n,
        elapsed,
        lat,
        run.ticks,
    ));
    let Some(launcher) = common::perftest::launcher() else {
        return Ok(());
    };
    let workload = common::perftest::Workload {
        uri: amqp,
        n,
        size: MESSAGE_BYTES,
        confirm_window: PUBLISH_WINDOW,
        prefetch: prefetch(),
        quorum,
    };
    let run = common::perftest::run(&launcher, &workload).await?;
    if !suffix.contains("again") {
        println!("perftest{suffix}: {}", run.command);
    }
    reports.push(Report {
        name: format!("perftest{suffix}"),
        set,
        kind: Kind::PerfTest,
        n,
        elapsed: run.elapsed,
        p50_ms: run.p50_ms,
        p99_ms: run.p99_ms,
        ticks: run.ticks,
    });
    Ok(())
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

/// A database server for the fence: name, admin URL, admin database, address.
type Db = (&'static str, &'static str, &'static str, &'static str);
const PG: Db = (
    "pg",
    "postgres://postgres@127.0.0.1:5432",
    "postgres",
    "127.0.0.1:5432",
);
const MARIADB: Db = (
    "mariadb",
    "mysql://root@127.0.0.1:3306",
    "test",
    "127.0.0.1:3306",
);
/// Scratch databases made for a run (server, admin database, name), dropped at the end.
type Scratch = Vec<(&'static str, &'static str, String)>;

/// `s` with the database fence on a new scratch database `name` of `db`.
async fn fenced(
    mut s: Settings,
    db: Db,
    name: String,
    scratch: &mut Scratch,
) -> anyhow::Result<Settings> {
    let (_, admin, admin_db, _) = db;
    let conn = Database::connect(format!("{admin}/{admin_db}")).await?;
    conn.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name}"))
        .await?;
    conn.execute_unprepared(&format!("CREATE DATABASE {name}"))
        .await?;
    s.database.url = format!("{admin}/{name}");
    scratch.push((admin, admin_db, name));
    s.consumer.db_fence = true;
    Ok(s)
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
    let classic = rabbit && (wanted("raw-lapin") || wanted("perftest") || wanted("core-rabbit"));
    let (quorum, on_cluster) = (filter.contains("quorum"), filter.contains("cluster"));
    if common::perftest::launcher().is_none() && rabbit && (classic || quorum || on_cluster) {
        println!(
            "note: PerfTest not installed (tools/perftest/install.sh, or PERFTEST_HOME); the perftest variants skipped"
        );
    }

    if classic {
        baselines(&mut reports, Set::Classic, "", AMQP, false, n).await?;
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
    let mut scratch = Scratch::new();
    for b in [1, batch] {
        if rabbit && wanted("core-rabbit") {
            let s = real(base_settings(dir.path(), &format!("r{b}"))?);
            reports.push(core(&label("core-rabbit", b), Set::Classic, s, n, b).await?);
            for db in [PG, MARIADB] {
                let (name, _, _, addr) = db;
                if !up(addr).await {
                    println!("note: {addr} unreachable; the {name} fence variant skipped");
                    continue;
                }
                let s = real(base_settings(dir.path(), &format!("r{name}{b}"))?);
                let s = fenced(s, db, format!("bench{pid}{name}{b}"), &mut scratch).await?;
                let variant = label(&format!("core-rabbit+fence-{name}"), b);
                reports.push(core(&variant, Set::Classic, s, n, b).await?);
            }
        }
        if wanted("embedded") {
            let s = base_settings(dir.path(), &format!("e{b}"))?;
            reports.push(core(&label("core-embedded", b), Set::Classic, s, n, b).await?);
            let mut s = base_settings(dir.path(), &format!("ef{b}"))?;
            s.consumer.db_fence = true;
            let variant = label("core-embedded+fence-sqlite", b);
            reports.push(core(&variant, Set::Classic, s, n, b).await?);
        }
    }
    // The machine drifts by a fifth between runs: the baselines are measured again after
    // the variants, and each ratio is against the mean of a baseline's runs.
    if classic {
        baselines(&mut reports, Set::Classic, " (again)", AMQP, false, n).await?;
    }
    if rabbit && quorum {
        baselines(&mut reports, Set::Quorum, "-quorum", AMQP, true, n).await?;
        let quorum_settings = |tag: String| -> anyhow::Result<Settings> {
            let mut s = real(base_settings(dir.path(), &tag)?);
            s.broker.queue_type = QueueType::Quorum;
            Ok(s)
        };
        for b in [1, batch] {
            let s = quorum_settings(format!("q{b}"))?;
            reports.push(core(&label("quorum-core", b), Set::Quorum, s, n, b).await?);
            if up(PG.3).await {
                let s = quorum_settings(format!("qpg{b}"))?;
                let s = fenced(s, PG, format!("bench{pid}qpg{b}"), &mut scratch).await?;
                let variant = label("quorum-core+fence-pg", b);
                reports.push(core(&variant, Set::Quorum, s, n, b).await?);
            }
        }
        baselines(&mut reports, Set::Quorum, "-quorum (again)", AMQP, true, n).await?;
    }
    if rabbit && on_cluster {
        let c = cluster::Cluster::start("bench", "BENCH_CLUSTER_PORT0", 5700);
        let urls = c.urls();
        baselines(&mut reports, Set::Cluster, "-cluster", &urls[0], true, n).await?;
        let on_cluster = |mut s: Settings| {
            s.broker.urls = urls.clone();
            s.broker.queue_type = QueueType::Quorum;
            s
        };
        for b in [1, batch] {
            let s = on_cluster(real(base_settings(dir.path(), &format!("c{b}"))?));
            reports.push(core(&label("cluster-core", b), Set::Cluster, s, n, b).await?);
        }
        if up(PG.3).await {
            let s = on_cluster(real(base_settings(dir.path(), "cpg")?));
            let s = fenced(s, PG, format!("bench{pid}clpg"), &mut scratch).await?;
            let variant = label("cluster-core+fence-pg", batch);
            reports.push(core(&variant, Set::Cluster, s, n, batch).await?);
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
    report::print(&reports, n, prefetch(), PUBLISH_WINDOW);
    Ok(())
}
