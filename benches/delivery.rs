//! Delivery-core throughput: N small messages published with confirms, consumed,
//! deduplicated and acked, end to end, against a raw lapin baseline in the same run.
//!
//!     cargo bench --bench delivery                  # all variants, 20,000 messages
//!     cargo bench --bench delivery -- 50000 embedded # N and a filter on variant names
//!
//! Variants: `raw-lapin` (persistent + confirms + manual ack, same prefetch: the
//! practical limit), `core-rabbit` (conveyor: envelope, Redis claim/complete, ack),
//! `core-rabbit+fence-pg` / `core-rabbit+fence-mariadb` (plus the per-message database
//! fence: the real per-message work), and the same on the embedded backends. Real
//! services are skipped with a note when unreachable.

// Test and bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

// Measured with the allocator the `conveyor` binary ships with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use conveyor::broker::{Envelope, Outgoing, Target};
use conveyor::config::{BrokerKind, DedupeKind, QueueOverride, Settings};
use conveyor::consumer::{Context, Handler, HandlerError, Outcome, process_one};
use conveyor::domains::ai_tasks::queues::AI_SHORT;
use futures::StreamExt as _;
use lapin::options::*;
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};
use sea_orm::{ConnectionTrait, Database};
use tokio::sync::Mutex;

const PREFETCH: u16 = 256;
const PUBLISH_WINDOW: usize = 500;
const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

struct Report {
    name: String,
    n: usize,
    elapsed: Duration,
    latencies_us: Vec<u64>,
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

fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

async fn raw_lapin(n: usize) -> anyhow::Result<Report> {
    let ns = format!("bench{}", std::process::id());
    let q = format!("{ns}.raw");
    let pub_conn = Connection::connect(AMQP, ConnectionProperties::default()).await?;
    let sub_conn = Connection::connect(AMQP, ConnectionProperties::default()).await?;
    let ch = pub_conn.create_channel().await?;
    ch.queue_declare(
        q.as_str().into(),
        QueueDeclareOptions::durable(),
        FieldTable::default(),
    )
    .await?;
    ch.confirm_select(ConfirmSelectOptions::default()).await?;
    let sub = sub_conn.create_channel().await?;
    sub.basic_qos(PREFETCH, BasicQosOptions::default()).await?;
    let mut consumer = sub
        .basic_consume(
            q.as_str().into(),
            "bench".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let start = Instant::now();
    let consume = tokio::spawn(async move {
        let mut lat = Vec::with_capacity(n);
        while let Some(Ok(d)) = consumer.next().await {
            let sent: u64 = std::str::from_utf8(&d.data[..16])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            d.acker.ack(BasicAckOptions::default()).await.ok();
            lat.push(now_us().saturating_sub(sent));
            if lat.len() == n {
                break;
            }
        }
        lat
    });
    let props = BasicProperties::default().with_delivery_mode(2);
    let mut sent = 0;
    while sent < n {
        let mut confirms = Vec::with_capacity(PUBLISH_WINDOW);
        for _ in 0..PUBLISH_WINDOW.min(n - sent) {
            let mut body = format!("{:016}", now_us()).into_bytes();
            body.resize(200, b'x');
            let opts = BasicPublishOptions {
                mandatory: true,
                ..Default::default()
            };
            confirms.push(
                ch.basic_publish("".into(), q.as_str().into(), opts, &body, props.clone())
                    .await?,
            );
            sent += 1;
        }
        for c in futures::future::join_all(confirms).await {
            anyhow::ensure!(c?.is_ack(), "nacked");
        }
    }
    let lat = consume.await?;
    let elapsed = start.elapsed();
    ch.queue_delete(q.as_str().into(), QueueDeleteOptions::default())
        .await?;
    Ok(Report {
        name: "raw-lapin".into(),
        n,
        elapsed,
        latencies_us: lat,
    })
}

struct Noop;

#[async_trait]
impl Handler for Noop {
    async fn handle(&self, _: &Context, _: &Envelope) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// Publishes `n` envelopes in confirmed windows while consuming them through
/// `process_one` with a no-op handler, one task per delivery as `consumer::run` does.
async fn core(name: &str, settings: Settings, n: usize) -> anyhow::Result<Report> {
    let platform = conveyor::app::platform(settings).await?;
    let deps = platform.consumer_deps();
    let mut sub = platform.broker.subscribe(&AI_SHORT).await?;
    let lat = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let done = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let consume = {
        let (lat, done) = (lat.clone(), done.clone());
        tokio::spawn(async move {
            let handler: Arc<dyn Handler> = Arc::new(Noop);
            let mut set = tokio::task::JoinSet::new();
            let mut taken = 0;
            while taken < n {
                let Some(d) = sub.next().await else { break };
                taken += 1;
                let (deps, handler, lat, done) =
                    (deps.clone(), handler.clone(), lat.clone(), done.clone());
                set.spawn(async move {
                    let created = Envelope::decode(&d.body, usize::MAX)
                        .map(|e| e.created_at.timestamp_micros() as u64);
                    let outcome = process_one(&deps, handler.as_ref(), d).await;
                    if outcome == Outcome::Acked {
                        if let Ok(c) = created {
                            lat.lock().await.push(now_us().saturating_sub(c));
                        }
                        done.fetch_add(1, Ordering::Relaxed);
                    } else {
                        eprintln!("unexpected outcome {outcome:?}");
                    }
                });
                while set.try_join_next().is_some() {}
            }
            while set.join_next().await.is_some() {}
        })
    };
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
    consume.await?;
    let elapsed = start.elapsed();
    anyhow::ensure!(
        done.load(Ordering::Relaxed) == n,
        "only {} of {n} acked",
        done.load(Ordering::Relaxed)
    );
    let latencies_us = std::mem::take(&mut *lat.lock().await);
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
    s.database.url = format!(
        "sqlite://{}?mode=rwc",
        dir.join(format!("{tag}.sqlite")).display()
    );
    s.queues.insert(
        "ai.short".into(),
        QueueOverride {
            prefetch: Some(PREFETCH),
            ..Default::default()
        },
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

async fn up(addr: &str) -> bool {
    matches!(
        tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr)).await,
        Ok(Ok(_))
    )
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
        reports.push(raw_lapin(n).await?);
    }
    if rabbit && wanted("core-rabbit") {
        reports.push(core("core-rabbit", real(base_settings(dir.path(), "r")?), n).await?);
        if up("127.0.0.1:5432").await {
            let mut s = real(base_settings(dir.path(), "rp")?);
            s.database.url = scratch_db(
                "postgres://postgres@127.0.0.1:5432",
                "postgres",
                &format!("bench{}pg", std::process::id()),
            )
            .await?;
            s.consumer.db_fence = true;
            reports.push(core("core-rabbit+fence-pg", s, n).await?);
        }
        if up("127.0.0.1:3306").await {
            let mut s = real(base_settings(dir.path(), "rm")?);
            s.database.url = scratch_db(
                "mysql://root@127.0.0.1:3306",
                "test",
                &format!("bench{}my", std::process::id()),
            )
            .await?;
            s.consumer.db_fence = true;
            reports.push(core("core-rabbit+fence-mariadb", s, n).await?);
        }
    } else if !rabbit {
        println!("note: RabbitMQ or Redis unreachable; real-service variants skipped");
    }
    if wanted("embedded") {
        reports.push(core("core-embedded", base_settings(dir.path(), "e")?, n).await?);
        let mut s = base_settings(dir.path(), "ef")?;
        s.consumer.db_fence = true;
        reports.push(core("core-embedded+fence-sqlite", s, n).await?);
    }

    let raw = reports
        .iter()
        .find(|r| r.name == "raw-lapin")
        .map(Report::rate);
    println!(
        "\n{n} messages, prefetch {PREFETCH}, publish window {PUBLISH_WINDOW}, persistent + confirms + manual ack"
    );
    println!(
        "{:<28} {:>10} {:>10} {:>10} {:>8}",
        "variant", "msgs/s", "p50 ms", "p99 ms", "x raw"
    );
    for r in &reports {
        let ratio = raw
            .map(|raw| format!("{:.2}", r.rate() / raw))
            .unwrap_or_else(|| "-".into());
        println!(
            "{:<28} {:>10.0} {:>10.1} {:>10.1} {:>8}",
            r.name,
            r.rate(),
            r.pct(0.5),
            r.pct(0.99),
            ratio
        );
    }
    Ok(())
}
