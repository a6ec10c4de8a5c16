//! The chaos harness (issue 16): a real deployment on this machine — `conveyor serve`
//! (API + outbox relay) and two `conveyor consume ai` processes on RabbitMQ, Redis and
//! PostgreSQL, in a namespace, database and key prefix of their own — under a steady
//! submission rate; one fault per scenario; then an audit of what was accepted against
//! what ended, and of effects that happened twice.
//!
//!     cargo test --test chaos                          # the short tier (CI): kill9, sigstop, redis-keys
//!     cargo test --test chaos -- --full                # every scenario, longer load
//!     cargo test --test chaos -- --scenario kill9 --json chaos.json
//!     cargo test --test chaos -- --full --db mariadb   # the same on MariaDB
//!
//! Per scenario it prints: accepted, ended, lost (accepted − ended after the drain: must be
//! 0), duplicated effects (materials or ledger rows twice for one task, a balance that does
//! not add up: must be 0), recovery (from the end of the fault until the finishing rate is
//! back to 90 % of what it was before), the longest a task in flight at the fault took,
//! and the slowest API answer during the fault. Every 20th task is poison (fails for
//! good): exactly those must be dead-lettered, recorded in `dead_letters`, and the
//! broker's dead-letter queues must be empty afterwards (the keeper drained them).
//! Scenarios that change a shared service (`rabbitmq-stop`, `redis-stop`,
//! `rabbitmq-alarm`, `postgres-restart`, `consumer-timeout`) run only when asked by name
//! or with `--full`, since they touch every user of the machine's services. The short
//! tier runs on PostgreSQL, plus `kill9` on MariaDB.

// Test code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sea_orm::{ConnectionTrait, Database, DatabaseConnection, Statement};
use serde_json::json;

#[path = "../support/cluster.rs"]
mod cluster;
use cluster::Cluster;

const BIN: &str = env!("CARGO_BIN_EXE_conveyor");
const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432";
const MARIADB_ADMIN: &str = "mysql://root@127.0.0.1:3306";
const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
const REDIS: &str = "redis://127.0.0.1:6379/";
/// The operators' token of a cluster scenario's API.
const OPS_TOKEN: &str = "chaos-ops-0123456789";

#[derive(Clone, Copy)]
struct Load {
    /// Submissions per second.
    rate: u32,
    /// Seconds of load before the fault and after it.
    before: u64,
    after: u64,
    /// Each task's simulated run time.
    task_ms: u64,
}

/// A fault: what it does, and how long it lasts (0: instantaneous).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fault {
    Kill9,
    Sigstop,
    RedisKeys,
    RabbitmqStop,
    RedisStop,
    /// RabbitMQ's memory alarm for 30 s: every publisher blocked.
    RabbitmqAlarm,
    /// PostgreSQL restarted under load.
    PostgresRestart,
    /// Poison (5 % of tasks fail for good) and one message that kills its consumer every
    /// time (`--features failpoints`) mixed into healthy traffic: the poison is
    /// dead-lettered and refunded, the killer quarantined as `crash_loop` after 5 deaths.
    PoisonMix,
    /// Consumers abort at 1 % of messages between the commit and the ack and between
    /// the executor call and the commit (`--features failpoints`), and are restarted as a
    /// supervisor would.
    Failpoints,
    /// RabbitMQ's `consumer_timeout` lowered to 2 s (checked every 0.5 s) for the whole
    /// run, under 4-s tasks: every channel is closed under its consumers again and again;
    /// the deliveries taken back must neither run twice nor be lost.
    ConsumerTimeout,
    /// On a 3-node cluster with quorum queues: `kill -9` of the node leading the work
    /// queue, restarted 5 s later.
    ClusterKill9,
    /// On the cluster: every node stopped gracefully and restarted, one at a time.
    ClusterRolling,
    /// On the cluster: the API's node cut off from the other two (`pause_minority`
    /// pauses it) for 10 s, then healed.
    ClusterPartition,
}

/// The database a deployment runs on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Db {
    Postgres,
    Mariadb,
}

impl Db {
    fn admin(self) -> &'static str {
        match self {
            Db::Postgres => PG_ADMIN,
            Db::Mariadb => MARIADB_ADMIN,
        }
    }

    /// The server's own database, to create and drop others from.
    fn admin_url(self) -> String {
        match self {
            Db::Postgres => format!("{PG_ADMIN}/postgres"),
            Db::Mariadb => format!("{MARIADB_ADMIN}/test"),
        }
    }

    fn drop_sql(self, name: &str) -> String {
        match self {
            Db::Postgres => format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            Db::Mariadb => format!("DROP DATABASE IF EXISTS {name}"),
        }
    }

    /// `expr` as a 64-bit integer (sums are NUMERIC on PostgreSQL, DECIMAL on MariaDB).
    fn int(self, expr: &str) -> String {
        match self {
            Db::Postgres => format!("CAST({expr} AS BIGINT)"),
            Db::Mariadb => format!("CAST({expr} AS SIGNED)"),
        }
    }

    /// Milliseconds from column `from` to column `to`.
    fn millis_between(self, from: &str, to: &str) -> String {
        match self {
            Db::Postgres => format!("EXTRACT(EPOCH FROM ({to} - {from})) * 1000"),
            Db::Mariadb => format!("TIMESTAMPDIFF(MICROSECOND, {from}, {to}) / 1000"),
        }
    }

    /// A timestamp literal both compare with the stored (UTC) values.
    fn at(self, t: chrono::DateTime<chrono::Utc>) -> String {
        match self {
            Db::Postgres => t.to_rfc3339(),
            Db::Mariadb => t.format("%Y-%m-%d %H:%M:%S%.6f").to_string(),
        }
    }
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::Kill9 => "kill9",
            Fault::Sigstop => "sigstop",
            Fault::RedisKeys => "redis-keys",
            Fault::RabbitmqStop => "rabbitmq-stop",
            Fault::RedisStop => "redis-stop",
            Fault::RabbitmqAlarm => "rabbitmq-alarm",
            Fault::PostgresRestart => "postgres-restart",
            Fault::Failpoints => "failpoints",
            Fault::PoisonMix => "poison-mix",
            Fault::ConsumerTimeout => "consumer-timeout",
            Fault::ClusterKill9 => "cluster-kill9",
            Fault::ClusterRolling => "cluster-rolling",
            Fault::ClusterPartition => "cluster-partition",
        }
    }

    fn all() -> Vec<Fault> {
        let mut all = vec![
            Fault::Kill9,
            Fault::Sigstop,
            Fault::RedisKeys,
            Fault::RabbitmqStop,
            Fault::RedisStop,
            Fault::RabbitmqAlarm,
            Fault::PostgresRestart,
            Fault::ConsumerTimeout,
            Fault::ClusterKill9,
            Fault::ClusterRolling,
            Fault::ClusterPartition,
        ];
        if cfg!(feature = "failpoints") {
            all.push(Fault::Failpoints);
            all.push(Fault::PoisonMix);
        }
        all
    }

    /// Runs on a cluster of its own (started by the harness), not on the machine's broker.
    fn on_cluster(self) -> bool {
        matches!(
            self,
            Fault::ClusterKill9 | Fault::ClusterRolling | Fault::ClusterPartition
        )
    }

    /// Touches only its own namespace and processes.
    fn private(self) -> bool {
        matches!(
            self,
            Fault::Kill9 | Fault::Sigstop | Fault::RedisKeys | Fault::Failpoints | Fault::PoisonMix
        )
    }
}

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success(), "kill {sig}");
}

/// The deployment of one scenario.
struct Stack {
    ns: String,
    db: Db,
    db_url: String,
    port: u16,
    env: Vec<(String, String)>,
    dir: tempfile::TempDir,
    /// On a cluster: every node's address, process `i` listing them from node `i`.
    nodes: Vec<String>,
}

impl Stack {
    async fn new(name: &str, db: Db, cluster: Option<&Cluster>) -> Stack {
        let ns = format!(
            "chaos{}{}",
            name.replace('-', ""),
            std::process::id() % 100_000
        );
        let admin = Database::connect(db.admin_url()).await.unwrap();
        admin.execute_unprepared(&db.drop_sql(&ns)).await.unwrap();
        admin
            .execute_unprepared(&format!("CREATE DATABASE {ns}"))
            .await
            .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let db_url = format!("{}/{ns}", db.admin());
        let mut env: Vec<(String, String)> = [
            ("CONVEYOR_ENV", "local"),
            (
                "CONVEYOR_CONFIG_DIR",
                concat!(env!("CARGO_MANIFEST_DIR"), "/config"),
            ),
            ("CONVEYOR__BROKER__KIND", "rabbitmq"),
            ("CONVEYOR__BROKER__URL", AMQP),
            ("CONVEYOR__BROKER__NAMESPACE", &ns),
            ("CONVEYOR__DEDUPE__KIND", "redis"),
            ("CONVEYOR__DEDUPE__URL", REDIS),
            ("CONVEYOR__DEDUPE__KEY_PREFIX", &ns),
            ("CONVEYOR__DATABASE__URL", &db_url),
            ("CONVEYOR__SERVER__PORT", &port.to_string()),
            ("CONVEYOR__LOG__LEVEL", "error"),
            ("CONVEYOR__BROKER__RETRY_TIERS_MS", "1000,5000,30000"),
            // Tasks are driven with params.simulate (durations, poison).
            ("CONVEYOR__AI__ALLOW_FAILURE_INJECTION", "true"),
            // One tenant drives the whole load: its limits are not what is tested here.
            ("CONVEYOR__LIMITS__SUBMITS_PER_SEC", "0"),
            ("CONVEYOR__LIMITS__TASKS_IN_FLIGHT", "0"),
            ("CONVEYOR__LIMITS__TASKS_RUNNING", "0"),
            // The DLQ keeper drains the broker's copies within the audit's wait.
            ("CONVEYOR__DEAD_LETTERS__KEEPER_INTERVAL_MS", "500"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let nodes = cluster.map(Cluster::urls).unwrap_or_default();
        if !nodes.is_empty() {
            for (k, v) in [
                ("CONVEYOR__BROKER__URLS", nodes.join(",").as_str()),
                ("CONVEYOR__BROKER__QUEUE_TYPE", "quorum"),
                ("CONVEYOR__BROKER__CONNECT_TIMEOUT_MS", "2000"),
                ("CONVEYOR__BROKER__RECONNECT_MAX_MS", "2000"),
                // /readyz names the node the API publishes through; /metrics counts moves.
                ("CONVEYOR__SERVER__OPS_TOKEN", OPS_TOKEN),
            ] {
                env.push((k.to_owned(), v.to_owned()));
            }
        }
        Stack {
            ns,
            db,
            db_url,
            port,
            env,
            dir: tempfile::tempdir().unwrap(),
            nodes,
        }
    }

    /// Process `i`'s order of the cluster's nodes (from node `i`), to spread the
    /// processes over the nodes; nothing without a cluster.
    fn node_order(&self, i: usize) -> Option<String> {
        let mut order = self.nodes.clone();
        let by = i.checked_rem(order.len())?;
        order.rotate_left(by);
        Some(order.join(","))
    }

    /// Consumer process `i` (of the AI group), on its own first node on a cluster.
    fn consumer(&self, i: usize, env: &[(&str, &str)]) -> Proc {
        let order = self.node_order(i + 1);
        let mut env = env.to_vec();
        if let Some(order) = &order {
            env.push(("CONVEYOR__BROKER__URLS", order));
        }
        self.spawn_with(&["consume", "ai"], &env)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.current_dir(self.dir.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    }

    fn spawn(&self, args: &[&str]) -> Proc {
        self.spawn_with(args, &[])
    }

    fn spawn_with(&self, args: &[&str], env: &[(&str, &str)]) -> Proc {
        Proc(
            self.command(args)
                .envs(env.iter().copied())
                .spawn()
                .unwrap(),
        )
    }

    /// A user with plenty of credits; its API key.
    fn user(&self) -> String {
        let out = self
            .command(&["users", "create", "--name", "chaos", "--credits", "1000000"])
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        text.split_whitespace()
            .find(|w| w.starts_with("cvk_"))
            .unwrap_or_else(|| panic!("no key in {text:?}"))
            .to_owned()
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The deployment's broker, as its processes see it.
    async fn broker(&self) -> Option<std::sync::Arc<dyn conveyor::broker::Broker>> {
        let settings = conveyor::settings::Settings::load_from(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/config")),
            "local",
            self.env.clone(),
        )
        .unwrap();
        let topology = conveyor::app::topology(&settings, conveyor::domains::ALL);
        conveyor::broker::connect(&settings.broker, topology)
            .await
            .ok()
    }

    /// Messages left in the namespace's dead-letter queues, after giving the keeper up
    /// to 10 s to drain them.
    async fn dead_letter_queue_depth(&self) -> u64 {
        let Some(b) = self.broker().await else {
            return u64::MAX;
        };
        let dlqs: Vec<String> = b.topology().queues.iter().map(|q| q.dlq.clone()).collect();
        let started = Instant::now();
        let left = loop {
            let mut left = 0;
            for dlq in &dlqs {
                left += b.depth(dlq).await.unwrap_or(u64::MAX / 1024);
            }
            if left == 0 || started.elapsed() > Duration::from_secs(10) {
                break left;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        b.close().await;
        left
    }

    async fn teardown(self, db: DatabaseConnection) {
        db.close().await.ok();
        if let Some(b) = self.broker().await {
            let _ = b.teardown().await;
            b.close().await;
        }
        if let Ok(client) = redis::Client::open(REDIS)
            && let Ok(mut c) = client.get_multiplexed_async_connection().await
        {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{}:*", self.ns))
                .query_async(&mut c)
                .await
                .unwrap_or_default();
            if !keys.is_empty() {
                let _: Result<i64, _> = redis::cmd("DEL").arg(keys).query_async(&mut c).await;
            }
        }
        if let Ok(admin) = Database::connect(self.db.admin_url()).await {
            let _ = admin.execute_unprepared(&self.db.drop_sql(&self.ns)).await;
        }
    }
}

async fn count(db: &DatabaseConnection, sql: &str) -> i64 {
    let row = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index::<i64>(0).unwrap()
}

#[derive(Debug, Default, serde::Serialize)]
struct Report {
    scenario: String,
    accepted: u64,
    refused: u64,
    ended: i64,
    lost: i64,
    duplicated_effects: i64,
    recovery_secs: f64,
    longest_in_flight_task_secs: f64,
    max_api_ms_during_fault: f64,
    p99_api_ms: f64,
    /// Consumer processes that crashed at a fail point (and were restarted).
    crashes: u32,
    /// Dead letters: exactly the poison the scenario sent.
    dead_lettered: i64,
    /// Messages left in the broker's dead-letter queues after the keeper's drain (0).
    dlq_left: u64,
    /// Successes per second during the fault (at least its first 5 s) ÷ before it.
    healthy_ratio: f64,
    /// Deliveries redelivered after their consumer died (the crash-loop counter).
    redeliveries: i64,
    /// Executor calls beyond one per task (re-runs after a crash or a lapsed lease).
    executor_reruns: i64,
    /// Cluster scenarios: publishing connections the API opened after its first (moves
    /// to another node, or back), from its `/metrics`.
    broker_moves: u64,
    passed: bool,
}

async fn run(fault: Fault, db_kind: Db, mut load: Load, cluster: Option<&Cluster>) -> Report {
    let stack = Stack::new(fault.name(), db_kind, cluster).await;
    assert!(
        stack.command(&["migrate"]).status().unwrap().success(),
        "migrate"
    );
    let key = stack.user();
    let _api = stack.spawn(&["serve"]);
    const FAILPOINTS: &str = "consumer::before_ack=1%return;ai::before_commit=1%return";
    let mut consumer_env: Vec<(&str, &str)> = match fault {
        Fault::Failpoints => vec![("FAILPOINTS", FAILPOINTS)],
        Fault::PoisonMix => vec![("FAILPOINTS", "ai::crash_marked=return")],
        _ => Vec::new(),
    };
    // The consumers' channels must open under the lowered timeout (it is read when a
    // channel opens): lowered before they start, restored even if the run panics.
    let _broker_timeout = (fault == Fault::ConsumerTimeout).then(|| {
        load.task_ms = 4000;
        load.rate = load.rate.min(10);
        BrokerTimeout::lower(2000, 500)
    });
    let mut consumers = vec![
        stack.consumer(0, &consumer_env),
        stack.consumer(1, &consumer_env),
    ];
    let mut crashes = 0u32;
    let client = reqwest::Client::new();
    let ready = Instant::now();
    while !client
        .get(stack.url("/readyz"))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
    {
        assert!(ready.elapsed() < Duration::from_secs(60), "API never ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let db = Database::connect(&stack.db_url).await.unwrap();

    // Steady load: one submission every 1/rate s, each timed.
    let latencies: Arc<Mutex<Vec<(Instant, f64)>>> = Arc::default();
    let accepted = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let refused = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let loader = {
        let (client, url, key, latencies, accepted, refused, stop) = (
            client.clone(),
            stack.url("/v1/tasks"),
            key.clone(),
            latencies.clone(),
            accepted.clone(),
            refused.clone(),
            stop.clone(),
        );
        tokio::spawn(async move {
            let mut tick =
                tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(load.rate)));
            let mut n = 0u64;
            let mut inflight = tokio::task::JoinSet::new();
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                n += 1;
                let mut body = json!({ "kind": "copywriting", "prompt": format!("chaos {n}"),
                                       "params": { "simulate": { "step_ms": load.task_ms } } });
                if n.is_multiple_of(20) {
                    body["params"]["simulate"]["fail_permanent"] = json!(true);
                }
                if fault == Fault::PoisonMix && n == u64::from(load.rate) * load.before + 1 {
                    body["prompt"] = json!(format!("chaos:crash {n}"));
                }
                let (client, url, key, latencies, accepted, refused) = (
                    client.clone(),
                    url.clone(),
                    key.clone(),
                    latencies.clone(),
                    accepted.clone(),
                    refused.clone(),
                );
                inflight.spawn(async move {
                    let t = Instant::now();
                    let r = client
                        .post(url)
                        .bearer_auth(key)
                        .timeout(Duration::from_secs(30))
                        .json(&body)
                        .send()
                        .await;
                    latencies
                        .lock()
                        .unwrap()
                        .push((t, t.elapsed().as_secs_f64() * 1000.0));
                    match r {
                        Ok(r) if r.status().as_u16() == 202 => {
                            accepted.fetch_add(1, Ordering::Relaxed)
                        }
                        _ => refused.fetch_add(1, Ordering::Relaxed),
                    };
                });
                while inflight.try_join_next().is_some() {}
            }
            while inflight.join_next().await.is_some() {}
        })
    };
    // Finishing rate, sampled every 250 ms.
    let samples: Arc<Mutex<Vec<(Instant, i64)>>> = Arc::default();
    let sampler = {
        let (db, samples) = (db.clone(), samples.clone());
        tokio::spawn(async move {
            loop {
                let n = count(&db, "SELECT COUNT(*) FROM tasks WHERE status = 'SUCCESS'").await;
                samples.lock().unwrap().push((Instant::now(), n));
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };

    tokio::time::sleep(Duration::from_secs(load.before)).await;
    let api_node_before = api_node(&client, &stack).await;
    // Whether the fault hit the node the API publishes through (it must then move).
    let mut hit_api_node = false;
    let fault_start = Instant::now();
    let in_flight_at_fault = chrono::Utc::now();
    // Fixed waits: each sleep below is how long its fault lasts (the scenario's input),
    // not a stand-in for a condition.
    match fault {
        Fault::ClusterKill9 => {
            let cluster = cluster.expect("a cluster scenario has its cluster");
            let leader = cluster.leader(&format!("{}.ai.short", stack.ns));
            hit_api_node = api_node_before.as_deref() == Some(cluster.label(leader).as_str());
            cluster.kill(leader);
            fault_lasts(Duration::from_secs(5)).await;
            cluster.restart(leader);
        }
        Fault::ClusterRolling => {
            let cluster = cluster.expect("a cluster scenario has its cluster");
            hit_api_node = true;
            for node in 0..cluster.nodes.len() {
                cluster.stop(node);
                cluster.restart(node);
                cluster.await_all_running(Duration::from_secs(60));
            }
        }
        Fault::ClusterPartition => {
            // Node 0 is the API's: its relay must move its publishing to the majority.
            let cluster = cluster.expect("a cluster scenario has its cluster");
            hit_api_node = api_node_before.as_deref() == Some(cluster.label(0).as_str());
            cluster.partition(&["isolate", &cluster.nodes[0]]);
            fault_lasts(Duration::from_secs(10)).await;
            cluster.partition(&["heal"]);
            cluster.await_all_running(Duration::from_secs(60));
        }
        Fault::Kill9 => {
            let mut victim = consumers.remove(0);
            victim.0.kill().unwrap();
            victim.0.wait().unwrap();
        }
        Fault::Sigstop => {
            // Past the task lease (5 s) and the claim lease (10 s): its work is re-driven
            // elsewhere; when it wakes, its late results must be fenced out.
            signal(&consumers[0].0, "-STOP");
            fault_lasts(Duration::from_secs(12)).await;
            signal(&consumers[0].0, "-CONT");
        }
        Fault::RedisKeys => {
            let client = redis::Client::open(REDIS).unwrap();
            let mut c = client.get_multiplexed_async_connection().await.unwrap();
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{}:*", stack.ns))
                .query_async(&mut c)
                .await
                .unwrap();
            if !keys.is_empty() {
                let _: i64 = redis::cmd("DEL")
                    .arg(keys)
                    .query_async(&mut c)
                    .await
                    .unwrap();
            }
        }
        Fault::RabbitmqStop => {
            // The broker application stops (every connection dropped), the node stays.
            rabbitmqctl("stop_app");
            fault_lasts(Duration::from_secs(10)).await;
            rabbitmqctl("start_app");
        }
        Fault::Failpoints | Fault::PoisonMix => {
            // The whole load is the fault: restart whatever crashed, as a supervisor would.
            let until = Instant::now() + Duration::from_secs(load.after);
            while Instant::now() < until {
                for (i, c) in consumers.iter_mut().enumerate() {
                    if let Ok(Some(_)) = c.0.try_wait() {
                        crashes += 1;
                        *c = stack.consumer(i, &consumer_env);
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            // Fail points end with the load: clean consumers drain what is left. The
            // poison mix keeps its killer consumers (restarted) until the crash loop is
            // quarantined.
            if fault == Fault::Failpoints {
                consumer_env.clear();
                consumers = vec![
                    stack.spawn(&["consume", "ai"]),
                    stack.spawn(&["consume", "ai"]),
                ];
            }
        }
        Fault::RabbitmqAlarm => {
            let _restore = Watermark::lower();
            fault_lasts(Duration::from_secs(30)).await;
        }
        // The whole run is the fault.
        Fault::ConsumerTimeout => tokio::time::sleep(Duration::from_secs(load.after)).await,
        Fault::PostgresRestart => {
            let v = std::fs::read_dir("/usr/lib/postgresql")
                .unwrap()
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .max_by_key(|v| v.parse::<u32>().unwrap_or(0))
                .unwrap();
            let ok = Command::new("pg_ctlcluster")
                .args(["--skip-systemctl-redirect", &v, "main", "restart"])
                .status()
                .unwrap();
            assert!(ok.success(), "pg_ctlcluster restart");
        }
        Fault::RedisStop => {
            // Every client of this Redis waits 10 s for an answer.
            let client = redis::Client::open(REDIS).unwrap();
            let mut c = client.get_multiplexed_async_connection().await.unwrap();
            let _: () = redis::cmd("CLIENT")
                .arg("PAUSE")
                .arg(10_000)
                .arg("ALL")
                .query_async(&mut c)
                .await
                .unwrap();
            fault_lasts(Duration::from_secs(10)).await;
        }
    }
    let fault_end = Instant::now();
    if !matches!(
        fault,
        Fault::Failpoints | Fault::PoisonMix | Fault::ConsumerTimeout
    ) {
        tokio::time::sleep(Duration::from_secs(load.after)).await;
    }
    stop.store(true, Ordering::Relaxed);
    loader.await.unwrap();
    let accepted_n = accepted.load(Ordering::Relaxed);
    // Drain: every accepted task ends (or the audit says it was lost).
    let drain = Instant::now();
    let ended_sql = "SELECT COUNT(*) FROM tasks WHERE status IN ('SUCCESS', 'FAILED', 'CANCELED')";
    while (count(&db, ended_sql).await as u64) < accepted_n
        && drain.elapsed() < Duration::from_secs(120)
    {
        for (i, c) in consumers.iter_mut().enumerate() {
            if let Ok(Some(_)) = c.0.try_wait() {
                crashes += 1;
                *c = stack.consumer(i, &consumer_env);
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    sampler.abort();
    let ended = count(&db, ended_sql).await;
    // Only the poison the harness sent may be dead-lettered: an outage must not
    // dead-letter anything, and the crash-marked message must end as crash_loop.
    let dead = count(&db, "SELECT COUNT(*) FROM dead_letters").await;
    let poison = count(
        &db,
        "SELECT COUNT(*) FROM tasks WHERE params LIKE '%fail_permanent%'",
    )
    .await;
    let killers = count(
        &db,
        "SELECT COUNT(*) FROM tasks WHERE prompt LIKE 'chaos:crash%'",
    )
    .await;
    // Deliveries that came back after their consumer died, and executor calls beyond one
    // per task (a re-run after a crash before the commit: expected under faults, and
    // fenced by the task's attempt so its result lands once).
    let redeliveries = count(
        &db,
        &format!(
            "SELECT {} FROM message_deaths",
            db_kind.int("COALESCE(SUM(deaths), 0)")
        ),
    )
    .await;
    let reruns = count(
        &db,
        "SELECT COUNT(*) - COUNT(DISTINCT task_id) FROM task_events WHERE message LIKE '% started'",
    )
    .await;
    let quarantined = count(
        &db,
        "SELECT COUNT(*) FROM dead_letters WHERE reason = 'crash_loop'",
    )
    .await;
    let duplicated = count(
        &db,
        "SELECT COUNT(*) FROM (SELECT task_id FROM materials GROUP BY task_id HAVING COUNT(*) > 1) d",
    )
    .await
        + count(
            &db,
            "SELECT COUNT(*) FROM (SELECT effect_key FROM credit_ledger GROUP BY effect_key HAVING COUNT(*) > 1) d",
        )
        .await
        // Every SUCCESS consumed its cost once, every other end refunded it.
        + i64::from(
            count(&db, &format!("SELECT {} FROM tasks WHERE status = 'SUCCESS'", db_kind.int("COALESCE(SUM(cost), 0)"))).await
                != 1_000_000 - count(&db, &format!("SELECT {} FROM users WHERE name = 'chaos'", db_kind.int("credits"))).await,
        );
    let longest = {
        let millis = db_kind.millis_between("created_at", "finished_at");
        let sql = format!(
            "SELECT {} FROM tasks WHERE created_at <= '{}'",
            db_kind.int(&format!("COALESCE(MAX({millis}), 0)")),
            db_kind.at(in_flight_at_fault)
        );
        count(&db, &sql).await as f64 / 1000.0
    };
    let dlq_left = stack.dead_letter_queue_depth().await;
    let lat = latencies.lock().unwrap().clone();
    let during = lat
        .iter()
        .filter(|(t, _)| *t >= fault_start && *t <= fault_end + Duration::from_secs(1))
        .map(|(_, ms)| *ms)
        .fold(0.0, f64::max);
    let mut all: Vec<f64> = lat.iter().map(|(_, ms)| *ms).collect();
    all.sort_by(|a, b| a.total_cmp(b));
    let p99 = all
        .get(((all.len().max(1) - 1) as f64 * 0.99) as usize)
        .copied()
        .unwrap_or(0.0);
    let recovery = recovery(&samples.lock().unwrap(), fault_start, fault_end);
    let broker_moves = if fault.on_cluster() {
        let moves = publish_connections(&client, &stack).await.saturating_sub(1);
        println!(
            "chaos: {}: the API published through {} before the fault, {} after; {moves} move(s)",
            fault.name(),
            api_node_before.as_deref().unwrap_or("?"),
            api_node(&client, &stack).await.as_deref().unwrap_or("?"),
        );
        moves
    } else {
        0
    };
    let report = Report {
        scenario: match db_kind {
            Db::Postgres => fault.name().into(),
            Db::Mariadb => format!("{}@mariadb", fault.name()),
        },
        accepted: accepted_n,
        refused: refused.load(Ordering::Relaxed),
        ended,
        lost: accepted_n as i64 - ended,
        duplicated_effects: duplicated,
        recovery_secs: recovery,
        longest_in_flight_task_secs: longest,
        max_api_ms_during_fault: during,
        p99_api_ms: p99,
        crashes,
        dead_lettered: dead,
        dlq_left,
        redeliveries,
        executor_reruns: reruns,
        broker_moves,
        healthy_ratio: healthy_ratio(
            &samples.lock().unwrap(),
            fault_start,
            // An instantaneous fault is judged over the 5 s after it.
            fault_end.max(fault_start + Duration::from_secs(5)),
        ),
        passed: accepted_n as i64 == ended
            && duplicated == 0
            && dead == poison + killers
            && quarantined == killers
            && dlq_left == 0
            // The taken-back deliveries were parked, never run a second time; and the
            // broker did take some back (else the scenario proved nothing).
            && (fault != Fault::ConsumerTimeout || (reruns == 0 && redeliveries > 0))
            // The API answers from the database and the outbox: a broker fault must not
            // hold an answer up to the publish timeout (5 s).
            && (!fault.on_cluster() || during < 5000.0)
            // A fault on the API's node moved its publishing (else it proved nothing).
            && (!hit_api_node || broker_moves > 0),
    };
    drop(consumers);
    drop(_api);
    stack.teardown(db).await;
    report
}

/// The node the API publishes through, from its `/readyz` (cluster scenarios).
async fn api_node(client: &reqwest::Client, stack: &Stack) -> Option<String> {
    let r = client
        .get(stack.url("/readyz"))
        .bearer_auth(OPS_TOKEN)
        .send()
        .await
        .ok()?;
    let body: serde_json::Value = r.json().await.ok()?;
    body["broker_nodes"]["publish"].as_str().map(str::to_owned)
}

/// Publishing connections the API opened, by `/metrics`.
async fn publish_connections(client: &reqwest::Client, stack: &Stack) -> u64 {
    let Ok(r) = client
        .get(stack.url("/metrics"))
        .bearer_auth(OPS_TOKEN)
        .send()
        .await
    else {
        return 0;
    };
    let text = r.text().await.unwrap_or_default();
    text.lines()
        .filter(|l| l.starts_with("conveyor_broker_connections_opened_total{role=\"publish\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// Successes per second between `start` and `end` ÷ in the 3 s before `start`.
fn healthy_ratio(samples: &[(Instant, i64)], start: Instant, end: Instant) -> f64 {
    let at = |t: Instant| {
        samples
            .iter()
            .min_by_key(|(u, _)| if *u > t { *u - t } else { t - *u })
            .copied()
    };
    let (Some(b0), Some(b1), Some(f1)) = (at(start - Duration::from_secs(3)), at(start), at(end))
    else {
        return f64::NAN;
    };
    let rate = |(t0, n0): (Instant, i64), (t1, n1): (Instant, i64)| {
        (n1 - n0) as f64 / t1.duration_since(t0).as_secs_f64().max(0.001)
    };
    let before = rate(b0, b1);
    // Nothing finished yet before the fault (tasks longer than the warm-up): no baseline.
    if before < 0.5 {
        return f64::NAN;
    }
    rate(b1, f1) / before
}

/// Seconds from `end` until the finishing rate (over 1 s windows) is back to 90 % of its
/// average over the 3 s before `start`; 0 when it never fell below.
fn recovery(samples: &[(Instant, i64)], start: Instant, end: Instant) -> f64 {
    let rate_at = |i: usize| -> Option<f64> {
        let (t, n) = samples[i];
        let j = samples[..i]
            .iter()
            .rposition(|(u, _)| t.duration_since(*u) >= Duration::from_secs(1))?;
        let (u, m) = samples[j];
        Some((n - m) as f64 / t.duration_since(u).as_secs_f64())
    };
    let before: Vec<f64> = (0..samples.len())
        .filter(|i| {
            let t = samples[*i].0;
            t < start && start.duration_since(t) <= Duration::from_secs(3)
        })
        .filter_map(rate_at)
        .collect();
    if before.is_empty() {
        return 0.0;
    }
    let baseline = before.iter().sum::<f64>() / before.len() as f64;
    let dipped = (0..samples.len())
        .filter(|i| samples[*i].0 >= start)
        .filter_map(rate_at)
        .any(|r| r < 0.9 * baseline);
    if !dipped {
        return 0.0;
    }
    (0..samples.len())
        .filter(|i| samples[*i].0 >= end)
        .find(|i| rate_at(*i).is_some_and(|r| r >= 0.9 * baseline))
        .map_or(f64::NAN, |i| samples[i].0.duration_since(end).as_secs_f64())
}

/// RabbitMQ's memory high watermark lowered until dropped (restored even when the run
/// panics), so the broker raises its memory alarm and blocks every publisher.
struct Watermark(String);

impl Watermark {
    fn lower() -> Watermark {
        let out = Command::new("rabbitmqctl")
            .args([
                "-q",
                "eval",
                "vm_memory_monitor:get_vm_memory_high_watermark().",
            ])
            .output()
            .unwrap();
        let was = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        // A fraction (0.4) or {absolute, N}: put back what was there, else the default.
        let was = if was.parse::<f64>().is_ok() {
            was
        } else {
            "0.4".to_owned()
        };
        rabbitmqctl_args(&["set_vm_memory_high_watermark", "0.0001"]);
        Watermark(was)
    }
}

impl Drop for Watermark {
    fn drop(&mut self) {
        rabbitmqctl_args(&["set_vm_memory_high_watermark", &self.0]);
    }
}

/// RabbitMQ's `consumer_timeout` (and the channel tick that checks it) lowered until
/// dropped, then put back as they were.
struct BrokerTimeout {
    timeout: String,
    tick: String,
}

impl BrokerTimeout {
    fn get(key: &str, default: &str) -> String {
        let out = Command::new("rabbitmqctl")
            .args([
                "-q",
                "eval",
                &format!("application:get_env(rabbit, {key})."),
            ])
            .output()
            .unwrap();
        // `{ok,1800000}`, or `undefined` when never set.
        let text = String::from_utf8_lossy(&out.stdout);
        text.trim()
            .strip_prefix("{ok,")
            .and_then(|t| t.strip_suffix('}'))
            .filter(|v| v.parse::<u64>().is_ok())
            .unwrap_or(default)
            .to_owned()
    }

    fn set(timeout: &str, tick: &str) {
        rabbitmqctl_args(&[
            "eval",
            &format!(
                "application:set_env(rabbit, consumer_timeout, {timeout}), \
                 application:set_env(rabbit, channel_tick_interval, {tick})."
            ),
        ]);
    }

    fn lower(timeout_ms: u64, tick_ms: u64) -> BrokerTimeout {
        let was = BrokerTimeout {
            timeout: Self::get("consumer_timeout", "1800000"),
            tick: Self::get("channel_tick_interval", "60000"),
        };
        Self::set(&timeout_ms.to_string(), &tick_ms.to_string());
        was
    }
}

impl Drop for BrokerTimeout {
    fn drop(&mut self) {
        Self::set(&self.timeout, &self.tick);
    }
}

fn rabbitmqctl_args(args: &[&str]) {
    let ok = Command::new("rabbitmqctl")
        .arg("-q")
        .args(args)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success(), "rabbitmqctl {args:?}");
}

fn rabbitmqctl(action: &str) {
    let ok = Command::new("rabbitmqctl")
        .args(["-q", action])
        .status()
        .unwrap();
    assert!(ok.success(), "rabbitmqctl {action}");
}

fn up(addr: &str) -> bool {
    std::net::TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_secs(1)).is_ok()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo test` passes its own flags (e.g. --nocapture, a filter): ignore them.
    let full = args.iter().any(|a| a == "--full");
    let named: Vec<Fault> = args
        .windows(2)
        .filter(|w| w[0] == "--scenario")
        .filter_map(|w| Fault::all().into_iter().find(|f| f.name() == w[1]))
        .collect();
    let json_path = args
        .windows(2)
        .find(|w| w[0] == "--json")
        .map(|w| w[1].clone());
    // `cargo test <filter>` hands the filter to every test binary: run only when it names
    // this one.
    let positional: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            !a.starts_with('-')
                && (*i == 0 || !matches!(args[i - 1].as_str(), "--scenario" | "--json" | "--db"))
        })
        .map(|(_, a)| a)
        .collect();
    if !positional.is_empty() && !positional.iter().any(|a| "chaos".contains(a.as_str())) {
        println!("test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 1 filtered out");
        return;
    }
    let db = match args
        .windows(2)
        .find(|w| w[0] == "--db")
        .map(|w| w[1].as_str())
    {
        None | Some("postgres") => Db::Postgres,
        Some("mariadb") => Db::Mariadb,
        Some(other) => panic!("--db {other}: postgres or mariadb"),
    };
    let required = std::env::var("CONVEYOR_REQUIRE_SERVICES").is_ok_and(|v| v == "1");
    if !(up("127.0.0.1:5672")
        && up("127.0.0.1:6379")
        && up("127.0.0.1:5432")
        && up("127.0.0.1:3306"))
    {
        assert!(
            !required,
            "chaos: RabbitMQ, Redis, PostgreSQL and MariaDB must answer (scripts/services.sh up)"
        );
        println!("chaos: SKIPPED (RabbitMQ, Redis, PostgreSQL or MariaDB not running)");
        return;
    }
    let scenarios: Vec<(Fault, Db)> = if !named.is_empty() {
        named.into_iter().map(|f| (f, db)).collect()
    } else if full {
        Fault::all()
            .into_iter()
            // Restarting the server is PostgreSQL's scenario.
            .filter(|f| db == Db::Postgres || *f != Fault::PostgresRestart)
            .map(|f| (f, db))
            .collect()
    } else {
        let mut short: Vec<(Fault, Db)> = Fault::all()
            .into_iter()
            .filter(|f| f.private())
            .map(|f| (f, Db::Postgres))
            .collect();
        short.push((Fault::Kill9, Db::Mariadb));
        short.extend(
            Fault::all()
                .into_iter()
                .filter(|f| f.on_cluster())
                .map(|f| (f, Db::Postgres)),
        );
        short
    };
    let load = if full {
        Load {
            rate: 40,
            before: 10,
            after: 20,
            task_ms: 500,
        }
    } else {
        Load {
            rate: 20,
            before: 4,
            after: 8,
            task_ms: 300,
        }
    };
    println!(
        "{:<24} {:>8} {:>6} {:>5} {:>5} {:>5} {:>4} {:>10} {:>12} {:>14} {:>8} {:>8} {:>8} {:>6} {:>6}",
        "scenario",
        "accepted",
        "ended",
        "lost",
        "dup",
        "dead",
        "dlq",
        "recovery",
        "longest task",
        "max API ms",
        "p99 ms",
        "crashes",
        "healthy",
        "redel",
        "reruns"
    );
    let mut reports = Vec::new();
    // One cluster for every cluster scenario, started when the first needs it.
    let mut cluster: Option<Cluster> = None;
    for (fault, db) in scenarios {
        if fault.on_cluster() && cluster.is_none() {
            cluster = Some(Cluster::start(
                "chaos",
                "CONVEYOR_CHAOS_CLUSTER_PORT0",
                5690,
            ));
        }
        let r = run(
            fault,
            db,
            load,
            cluster.as_ref().filter(|_| fault.on_cluster()),
        )
        .await;
        println!(
            "{:<24} {:>8} {:>6} {:>5} {:>5} {:>5} {:>4} {:>9.1}s {:>11.1}s {:>14.0} {:>8.0} {:>8} {:>7.0}% {:>6} {:>6}",
            r.scenario,
            r.accepted,
            r.ended,
            r.lost,
            r.duplicated_effects,
            r.dead_lettered,
            r.dlq_left,
            r.recovery_secs,
            r.longest_in_flight_task_secs,
            r.max_api_ms_during_fault,
            r.p99_api_ms,
            r.crashes,
            r.healthy_ratio * 100.0,
            r.redeliveries,
            r.executor_reruns
        );
        reports.push(r);
    }
    if let Some(path) = json_path {
        std::fs::write(&path, serde_json::to_string_pretty(&reports).unwrap()).unwrap();
        println!("chaos: wrote {path}");
    }
    let failed = reports.iter().filter(|r| !r.passed).count();
    // The line CI counts, in libtest's format.
    println!(
        "test result: {}. {} passed; {} failed; 0 ignored; 0 measured; 0 filtered out",
        if failed == 0 { "ok" } else { "FAILED" },
        reports.len() - failed,
        failed
    );
    assert_eq!(failed, 0, "a scenario lost or doubled work");
}

/// Holds a fault for `length`. The length is the scenario's input (past a lease, past a
/// retry tier, long enough for clients to see the outage): there is no condition to await
/// while a fault lasts, only the recovery after it, which the scenarios poll for.
async fn fault_lasts(length: Duration) {
    tokio::time::sleep(length).await;
}
