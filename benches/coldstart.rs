//! Cold start: the time from spawning the `conveyor` binary to the first moment it is
//! ready, R times each, as p50 / min / max, with the resident set at that moment and the
//! time from SIGTERM to exit (issue 63's goal: `serve` ready within 1 s on the embedded
//! defaults, release build).
//!
//! - `serve`, embedded defaults (no services): in a fresh empty directory each time, as
//!   `cargo run` on a new machine (creates `./data`, migrates SQLite), then again and
//!   again in one directory (a restart). Ready: `GET /readyz` answers 200.
//! - `serve` on RabbitMQ + PostgreSQL + Redis (a scratch database and a namespace of its
//!   own, `BENCH_PG_PARAMS` as the submit bench, default `sslmode=disable`): the first
//!   start (migrates, declares the topology) once, then R restarts. Ready: `/readyz` 200.
//! - `consume ai` on the same services. It serves no HTTP (no health port: `consume`
//!   runs the group's consumers, its jobs and the relay, nothing else), so ready is what
//!   the broker sees: every queue of the group has a consumer (a passive declare of
//!   each, polled like `/readyz`).
//!
//! Polled every 2 ms; the process is stopped with SIGTERM once ready and waited for.
//!
//!     cargo bench --bench coldstart            # 10 starts of each
//!     cargo bench --bench coldstart -- 3       # R starts of each
//!     CONVEYOR_BIN=target/dist/conveyor cargo bench --bench coldstart  # another build
//!
//! The real-service rows need RabbitMQ, Redis and PostgreSQL on localhost
//! (`scripts/services.sh up`); without them only the embedded rows run.

// Bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;

/// The binary measured: this build's, or `CONVEYOR_BIN` (to compare two builds).
fn bin() -> String {
    std::env::var("CONVEYOR_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_conveyor").to_owned())
}

const POLL: Duration = Duration::from_millis(2);
/// A start that takes longer is a failed run.
const DEADLINE: Duration = Duration::from_secs(120);

/// One start: spawn to ready, the resident set then (KiB), SIGTERM to exit.
struct Start {
    ready: Duration,
    rss_kib: u64,
    stop: Duration,
}

/// What says a process is ready.
enum Ready<'a> {
    /// `GET http://127.0.0.1:<port>/readyz` answers 200.
    Readyz(u16),
    /// Every one of these queues has a consumer.
    Consumers(&'a str, &'a [String]),
}

/// A loopback port nothing listens on right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `conveyor args` in `dir` with `env` over an empty environment, waits until
/// `ready` holds, measures, stops it.
async fn start(args: &[&str], env: &[(String, String)], dir: &Path, ready: &Ready<'_>) -> Start {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    // The consumer check's connection, before the clock starts.
    let amqp = match ready {
        Ready::Consumers(url, queues) => {
            let conn = lapin::Connection::connect(url, lapin::ConnectionProperties::default())
                .await
                .unwrap();
            // No consumer left from the previous start.
            while consumers(&conn, queues).await.unwrap_or(0) > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Some(conn)
        }
        Ready::Readyz(_) => None,
    };
    let t0 = Instant::now();
    let mut child = tokio::process::Command::new(bin())
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("CONVEYOR_ENV", "local")
        .env(
            "CONVEYOR_CONFIG_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config"),
        )
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("starting the conveyor binary");
    loop {
        let up = match ready {
            Ready::Readyz(port) => http
                .get(format!("http://127.0.0.1:{port}/readyz"))
                .timeout(DEADLINE)
                .send()
                .await
                .is_ok_and(|r| r.status() == reqwest::StatusCode::OK),
            Ready::Consumers(_, queues) => {
                let conn = amqp.as_ref().unwrap();
                let min = min_consumers(conn, queues).await;
                min.is_some_and(|m| m > 0)
            }
        };
        if up {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "`conveyor {}` exited before ready: {status}",
                args.join(" ")
            );
        }
        assert!(
            t0.elapsed() < DEADLINE,
            "`conveyor {}` not ready after {DEADLINE:?}",
            args.join(" ")
        );
        tokio::time::sleep(POLL).await;
    }
    let ready_in = t0.elapsed();
    let pid = child.id().unwrap();
    let rss_kib = common::memory::rss(&pid.to_string()).map_or(0, |r| r.total);
    // SIGTERM, as an orchestrator would: the process drains and closes its connections.
    let t1 = Instant::now();
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::TERM,
    );
    let status = child.wait().await.unwrap();
    assert!(
        status.success(),
        "`conveyor {}` stopped with {status}",
        args.join(" ")
    );
    let stop = t1.elapsed();
    if let Some(conn) = amqp {
        let _ = conn.close(0, "done".into()).await;
    }
    Start {
        ready: ready_in,
        rss_kib,
        stop,
    }
}

/// The consumer count of each of `queues` (`None` when one cannot be read yet).
async fn consumer_counts(conn: &lapin::Connection, queues: &[String]) -> Option<Vec<u32>> {
    let ch = conn.create_channel().await.ok()?;
    let mut counts = Vec::with_capacity(queues.len());
    for q in queues {
        // A passive declare of a queue that does not exist closes the channel.
        let queue = ch
            .queue_declare(
                q.as_str().into(),
                QueueDeclareOptions {
                    passive: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .ok()?;
        counts.push(queue.consumer_count());
    }
    let _ = ch.close(0, "".into()).await;
    Some(counts)
}

/// The fewest consumers any of `queues` has.
async fn min_consumers(conn: &lapin::Connection, queues: &[String]) -> Option<u32> {
    Some(
        consumer_counts(conn, queues)
            .await?
            .into_iter()
            .min()
            .unwrap_or(u32::MAX),
    )
}

/// The most consumers any of `queues` has.
async fn consumers(conn: &lapin::Connection, queues: &[String]) -> Option<u32> {
    Some(
        consumer_counts(conn, queues)
            .await?
            .into_iter()
            .max()
            .unwrap_or(0),
    )
}

fn row(name: &str, mut starts: Vec<Start>) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    starts.sort_by_key(|s| s.ready);
    let p50 = &starts[(starts.len() - 1) / 2];
    let mut rss: Vec<u64> = starts.iter().map(|s| s.rss_kib).collect();
    rss.sort_unstable();
    let mut stops: Vec<Duration> = starts.iter().map(|s| s.stop).collect();
    stops.sort_unstable();
    println!(
        "{name:<46} {:>3} {:>8.0} {:>8.0} {:>8.0} {:>9.1} {:>8.0}",
        starts.len(),
        ms(p50.ready),
        ms(starts[0].ready),
        ms(starts[starts.len() - 1].ready),
        rss[(rss.len() - 1) / 2] as f64 / 1024.0,
        ms(stops[(stops.len() - 1) / 2]),
    );
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let r: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .and_then(|a| a.parse().ok())
        .unwrap_or(10)
        .max(1);
    println!("cold start of {}: spawn to ready, {r} starts each", bin());
    println!(
        "{:<46} {:>3} {:>8} {:>8} {:>8} {:>9} {:>8}",
        "process", "n", "p50 ms", "min ms", "max ms", "RSS MiB", "stop ms"
    );

    // Embedded: a fresh directory each time, then restarts in one directory.
    let mut fresh = Vec::new();
    let mut dirs = Vec::new();
    for _ in 0..r {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let env = [("CONVEYOR__SERVER__PORT".to_owned(), port.to_string())];
        fresh.push(start(&["serve"], &env, dir.path(), &Ready::Readyz(port)).await);
        dirs.push(dir);
    }
    row("serve, embedded, fresh data dir", fresh);
    let dir = dirs.pop().unwrap();
    drop(dirs);
    let mut again = Vec::new();
    for _ in 0..r {
        let port = free_port();
        let env = [("CONVEYOR__SERVER__PORT".to_owned(), port.to_string())];
        again.push(start(&["serve"], &env, dir.path(), &Ready::Readyz(port)).await);
    }
    row("serve, embedded, restart", again);

    let Some(stack) = common::Stack::start("coldstart").await else {
        return;
    };
    let s = &stack.settings;
    let pg_params = std::env::var("BENCH_PG_PARAMS").unwrap_or_else(|_| "sslmode=disable".into());
    let env: Vec<(String, String)> = [
        ("CONVEYOR__BROKER__KIND", "rabbitmq".to_owned()),
        ("CONVEYOR__BROKER__URL", s.broker.url.clone()),
        ("CONVEYOR__BROKER__NAMESPACE", s.broker.namespace.clone()),
        ("CONVEYOR__DEDUPE__KIND", "redis".to_owned()),
        ("CONVEYOR__DEDUPE__URL", s.dedupe.url.clone()),
        ("CONVEYOR__DEDUPE__KEY_PREFIX", s.dedupe.key_prefix.clone()),
        (
            "CONVEYOR__DATABASE__URL",
            format!("{}?{pg_params}", s.database.url),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let dir = tempfile::tempdir().unwrap();
    let serve = |port: u16| {
        let mut e = env.clone();
        e.push(("CONVEYOR__SERVER__PORT".into(), port.to_string()));
        e
    };
    let port = free_port();
    let first = start(&["serve"], &serve(port), dir.path(), &Ready::Readyz(port)).await;
    row("serve, RabbitMQ + PostgreSQL + Redis, first", vec![first]);
    let mut real = Vec::new();
    for _ in 0..r {
        let port = free_port();
        real.push(start(&["serve"], &serve(port), dir.path(), &Ready::Readyz(port)).await);
    }
    row("serve, RabbitMQ + PostgreSQL + Redis", real);

    let topology = conveyor::app::topology(s, conveyor::domains::ALL);
    let queues: Vec<String> = topology
        .queues
        .iter()
        .filter(|q| q.spec.group == "ai")
        .map(|q| q.name.clone())
        .collect();
    let ready = Ready::Consumers(&s.broker.url, &queues);
    let mut consume = Vec::new();
    for _ in 0..r {
        consume.push(start(&["consume", "ai"], &env, dir.path(), &ready).await);
    }
    row(
        &format!("consume ai, same services ({} queues)", queues.len()),
        consume,
    );
    stack.teardown().await;
}
