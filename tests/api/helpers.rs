//! Test harness: per-test settings with a unique namespace (queues, Redis keys,
//! database, files), the backends to run against, `spawn_app`, and small helpers.
//!
//! Real-service tests run when RabbitMQ, Redis, MariaDB and PostgreSQL answer on
//! localhost; otherwise they print why they were skipped, unless
//! `CONVEYOR_REQUIRE_SERVICES=1` (CI), where an unreachable service fails the test.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use conveyor::app::{Application, Platform};
use conveyor::broker::Envelope;
use conveyor::broker::settings::BrokerKind;
use conveyor::broker::settings::QueueOverride;
use conveyor::consumer::{Context, Handler, HandlerError};
use conveyor::dedupe::settings::DedupeKind;
use conveyor::settings::Settings;
use sea_orm::{ConnectionTrait, Database};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub fn amqp_url() -> String {
    std::env::var("CONVEYOR_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}
pub fn redis_url() -> String {
    std::env::var("CONVEYOR_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into())
}
fn mysql_admin_url() -> String {
    std::env::var("CONVEYOR_TEST_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into())
}
fn postgres_admin_url() -> String {
    std::env::var("CONVEYOR_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// Which implementations a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Embedded broker, embedded dedupe, SQLite.
    Embedded,
    /// RabbitMQ, Redis, MariaDB.
    RabbitMariadb,
    /// RabbitMQ, Redis, PostgreSQL.
    RabbitPostgres,
}

impl Backend {
    pub fn is_real(self) -> bool {
        self != Backend::Embedded
    }
}

fn required() -> bool {
    std::env::var("CONVEYOR_REQUIRE_SERVICES").is_ok_and(|v| v == "1")
}

async fn reachable(addr: &str) -> bool {
    matches!(
        tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(addr)).await,
        Ok(Ok(_))
    )
}

/// Whether the services `backend` needs answer. Panics (fails the test) when they don't
/// and CONVEYOR_REQUIRE_SERVICES=1; otherwise prints the reason to skip.
pub async fn services_up(backend: Backend, test: &str) -> bool {
    let needed: &[(&str, &str)] = match backend {
        Backend::Embedded => &[],
        Backend::RabbitMariadb => &[
            ("RabbitMQ", "127.0.0.1:5672"),
            ("Redis", "127.0.0.1:6379"),
            ("MariaDB", "127.0.0.1:3306"),
        ],
        Backend::RabbitPostgres => &[
            ("RabbitMQ", "127.0.0.1:5672"),
            ("Redis", "127.0.0.1:6379"),
            ("PostgreSQL", "127.0.0.1:5432"),
        ],
    };
    for (name, addr) in needed {
        if !reachable(addr).await {
            assert!(
                !required(),
                "{test}: {name} at {addr} is unreachable and CONVEYOR_REQUIRE_SERVICES=1"
            );
            // Written past the test harness's capture, so a skip is always visible.
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test} [{backend:?}]: {name} at {addr} is unreachable"
            );
            return false;
        }
    }
    true
}

/// The OpenSearch node (tools/opensearch-node): its URL, or `None` to skip (a failure
/// when CONVEYOR_REQUIRE_SERVICES=1).
pub async fn opensearch(test: &str) -> Option<String> {
    let addr = "127.0.0.1:9200";
    if reachable(addr).await {
        return Some(format!("http://{addr}"));
    }
    assert!(
        !required(),
        "{test}: OpenSearch at {addr} is unreachable and CONVEYOR_REQUIRE_SERVICES=1 (tools/opensearch-node/start.sh)"
    );
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: OpenSearch at {addr} is unreachable"
    );
    None
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A namespace no other test or process uses.
pub fn unique_namespace() -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let r: u32 = rand::random();
    format!(
        "ct{}x{n}x{:06x}",
        std::process::id() % 100_000,
        r & 0xff_ffff
    )
}

/// Settings for one test: unique namespace, its own files and database.
pub struct TestEnv {
    pub backend: Backend,
    pub settings: Settings,
    pub dir: tempfile::TempDir,
    database: Option<(String, String)>,
    cleaned: bool,
}

impl TestEnv {
    /// `None` when the backend's services are unreachable (and not required).
    pub async fn new(backend: Backend, test: &str) -> Option<TestEnv> {
        if !services_up(backend, test).await {
            return None;
        }
        let ns = unique_namespace();
        let dir = tempfile::tempdir().expect("temp dir");
        let config_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/config");
        let mut settings =
            Settings::load_from(std::path::Path::new(config_dir), "test", Vec::new())
                .expect("test settings");
        settings.server.port = 0;
        settings.broker.namespace = ns.clone();
        settings.dedupe.key_prefix = ns.clone();
        settings.broker.embedded_path = dir.path().join("broker.sqlite");
        let mut database = None;
        match backend {
            Backend::Embedded => {
                settings.database.url = format!(
                    "sqlite://{}?mode=rwc",
                    dir.path().join("conveyor.sqlite").display()
                );
            }
            Backend::RabbitMariadb | Backend::RabbitPostgres => {
                settings.broker.kind = BrokerKind::Rabbitmq;
                settings.broker.url = amqp_url();
                settings.dedupe.kind = DedupeKind::Redis;
                settings.dedupe.url = redis_url();
                let admin = if backend == Backend::RabbitMariadb {
                    mysql_admin_url()
                } else {
                    postgres_admin_url()
                };
                let admin_db = if backend == Backend::RabbitMariadb {
                    "test"
                } else {
                    "postgres"
                };
                let conn = Database::connect(format!("{admin}/{admin_db}"))
                    .await
                    .expect("admin connection");
                conn.execute_unprepared(&format!("CREATE DATABASE {ns}"))
                    .await
                    .expect("create test database");
                conn.close().await.ok();
                settings.database.url = format!("{admin}/{ns}");
                settings.database.max_connections = 8;
                database = Some((admin, format!("{admin_db}|{ns}")));
            }
        }
        Some(TestEnv {
            backend,
            settings,
            dir,
            database,
            cleaned: false,
        })
    }

    pub fn with_max_attempts(mut self, queue: &str, n: u32) -> Self {
        self.settings.queues.insert(
            queue.to_owned(),
            QueueOverride {
                max_attempts: Some(n),
                ..Default::default()
            },
        );
        self
    }

    pub async fn platform(&self) -> Platform {
        conveyor::app::platform(self.settings.clone())
            .await
            .expect("platform connects")
    }

    /// A platform declaring the queues of every domain of the build plus `extra`.
    pub async fn platform_with(&self, extra: &[&'static conveyor::domains::Domain]) -> Platform {
        let domains: Vec<_> = conveyor::domains::ALL
            .iter()
            .chain(extra)
            .copied()
            .collect();
        let topology = conveyor::app::topology(&self.settings, &domains);
        Platform::connect(self.settings.clone(), topology)
            .await
            .expect("platform connects")
    }

    /// Removes what the test created: queues and exchanges, Redis keys, the database.
    pub async fn cleanup(mut self, platform: Option<&Platform>) {
        let mut torn_down = true;
        if let Some(p) = platform {
            // Through a proxy the test took down, the platform's own connection cannot
            // delete anything: the real broker is asked then.
            torn_down = p.broker.teardown().await.is_ok();
            p.broker.close().await;
        }
        self.cleaned = true;
        let database = self.database.take();
        remove_resources(self.backend, &self.settings, database, !torn_down).await;
    }
}

/// A test that panicked never reached `cleanup`: remove its queues, keys and database
/// anyway, so the shared services do not fill up with leftovers.
impl Drop for TestEnv {
    fn drop(&mut self) {
        if self.cleaned || !self.backend.is_real() {
            return;
        }
        let (backend, settings, database) =
            (self.backend, self.settings.clone(), self.database.take());
        let _ = std::thread::spawn(move || {
            if let Ok(rt) = tokio::runtime::Runtime::new() {
                rt.block_on(remove_resources(backend, &settings, database, true));
            }
        })
        .join();
    }
}

async fn remove_resources(
    backend: Backend,
    settings: &Settings,
    database: Option<(String, String)>,
    broker: bool,
) {
    if broker && backend.is_real() {
        // The broker itself, whatever proxies the test put in front of it.
        let mut settings = settings.clone();
        settings.broker.url = amqp_url();
        settings.broker.urls.clear();
        let topology = conveyor::app::topology(&settings, conveyor::domains::ALL);
        if let Ok(b) = conveyor::broker::connect(&settings.broker, topology).await {
            let _ = b.teardown().await;
            b.close().await;
        }
    }
    if backend.is_real()
        && let Ok(client) = redis::Client::open(redis_url())
        && let Ok(mut c) = client.get_multiplexed_async_connection().await
    {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}:*", settings.dedupe.key_prefix))
            .query_async(&mut c)
            .await
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: Result<i64, _> = redis::cmd("DEL").arg(keys).query_async(&mut c).await;
        }
    }
    if let Some((admin, spec)) = &database {
        let (admin_db, name) = spec.split_once('|').unwrap_or(("test", spec));
        if let Ok(conn) = Database::connect(format!("{admin}/{admin_db}")).await {
            let force = if admin.starts_with("postgres") {
                " WITH (FORCE)"
            } else {
                ""
            };
            let _ = conn
                .execute_unprepared(&format!("DROP DATABASE IF EXISTS {name}{force}"))
                .await;
            conn.close().await.ok();
        }
    }
}

/// A running API server on a free port.
pub struct TestApp {
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    pub platform: Platform,
    pub shutdown: CancellationToken,
    pub server: tokio::task::JoinHandle<anyhow::Result<()>>,
    /// The app's installed consumers and jobs, which `start_consumers` runs.
    workers: conveyor::app::InstalledWorkers,
    /// Consumers started beside the API (RabbitMQ backends): awaited by `stop`, so the
    /// clean-up that follows cannot race a subscription re-declaring its queue.
    consumers: std::sync::Mutex<Vec<tokio::task::JoinHandle<anyhow::Result<()>>>>,
    /// The app's admin key, made on first use.
    admin_key: tokio::sync::OnceCell<String>,
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `GET path`, with the operators' token when given.
    async fn get_as_ops(&self, path: &str, ops_token: Option<&str>) -> reqwest::Response {
        let mut req = self.client.get(self.url(path));
        if let Some(token) = ops_token {
            req = req.bearer_auth(token);
        }
        match req.send().await {
            Ok(r) => r,
            Err(e) if self.server.is_finished() => {
                panic!("GET {path}: the app is not running (see its error above): {e}")
            }
            Err(e) => panic!("GET {path}: {e}"),
        }
    }

    /// `/readyz`: its status and body, with the operators' token when given.
    pub async fn readyz(&self, ops_token: Option<&str>) -> (u16, serde_json::Value) {
        let r = self.get_as_ops("/readyz", ops_token).await;
        let status = r.status().as_u16();
        (status, r.json().await.expect("a JSON readiness body"))
    }

    /// `/metrics` as text (a 200 asserted), with the operators' token when given.
    pub async fn metrics(&self, ops_token: Option<&str>) -> String {
        let r = self.get_as_ops("/metrics", ops_token).await;
        assert_eq!(r.status(), 200, "/metrics");
        r.text().await.expect("metrics text")
    }

    pub async fn stop(self) -> Platform {
        self.shutdown.cancel();
        self.server
            .await
            .expect("server task")
            .expect("server stops cleanly");
        let consumers = std::mem::take(&mut *self.consumers.lock().expect("consumers"));
        for c in consumers {
            let _ = tokio::time::timeout(Duration::from_secs(30), c).await;
        }
        self.platform
    }
}

/// Stops the app and removes what its test created.
pub async fn done(env: TestEnv, app: TestApp) {
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

pub async fn spawn_app(env: &TestEnv) -> TestApp {
    spawn_app_with(env, &[]).await
}

/// An app with every domain of the build plus `extra` (domains of the test suite).
pub async fn spawn_app_with(
    env: &TestEnv,
    extra: &[&'static conveyor::domains::Domain],
) -> TestApp {
    let domains: Vec<_> = conveyor::domains::ALL
        .iter()
        .chain(extra)
        .copied()
        .collect();
    let app = Application::build_with(env.settings.clone(), &domains)
        .await
        .expect("app builds");
    let addr = app.addr();
    let platform = app.platform().clone();
    let workers = app.workers();
    let shutdown = CancellationToken::new();
    let shutdown_of_app = shutdown.clone();
    // An app that stops on its own says why, in the failing test's output.
    let server = tokio::spawn(async move {
        let ran = app.run_until(shutdown_of_app).await;
        if let Err(e) = &ran {
            eprintln!("the app stopped with an error: {e:#}");
        }
        ran
    });
    TestApp {
        addr,
        // A hung request fails its test instead of hanging the suite.
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client"),
        platform,
        shutdown,
        server,
        workers,
        consumers: Default::default(),
        admin_key: Default::default(),
    }
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes.
pub async fn wait_until<F, Fut>(timeout: Duration, what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    while !cond().await {
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Records what a [`TestHandler`] did.
#[derive(Default)]
pub struct Recorder {
    /// Successful effects per message id.
    pub effects: Mutex<HashMap<String, u32>>,
    /// Handler invocations (successful or not).
    pub calls: AtomicU32,
    /// Attempt number seen on each successful message.
    pub attempts: Mutex<HashMap<String, u32>>,
    pub started: Notify,
    /// While set, messages with `fail_while_broken` fail permanently (a dependency
    /// that is down until an operator fixes it).
    pub broken: std::sync::atomic::AtomicBool,
}

impl Recorder {
    pub fn effects_of(&self, id: &str) -> u32 {
        self.effects.lock().unwrap().get(id).copied().unwrap_or(0)
    }
    pub fn total_effects(&self) -> u32 {
        self.effects.lock().unwrap().values().sum()
    }
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

/// A handler whose behaviour comes from the payload:
/// `fail_until_attempt` (transient before that attempt), `permanent`, `panic_until_attempt`,
/// `sleep_ms`, `fail_while_broken` (permanent while [`Recorder::broken`]).
pub struct TestHandler(pub Arc<Recorder>);

#[async_trait]
impl Handler for TestHandler {
    async fn handle(&self, _ctx: &Context, msg: &Envelope) -> Result<(), HandlerError> {
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        self.0.started.notify_waiters();
        let p = &msg.payload;
        let num = |k: &str| p.get(k).and_then(|v| v.as_u64());
        if let Some(ms) = num("sleep_ms") {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if p.get("fail_while_broken").and_then(|v| v.as_bool()) == Some(true)
            && self.0.broken.load(Ordering::SeqCst)
        {
            return Err(HandlerError::permanent("the dependency is broken"));
        }
        if p.get("permanent").and_then(|v| v.as_bool()) == Some(true) {
            return Err(HandlerError::permanent("this can never work"));
        }
        if num("panic_until_attempt").is_some_and(|n| u64::from(msg.attempt) < n) {
            panic!("handler blew up");
        }
        if num("fail_until_attempt").is_some_and(|n| u64::from(msg.attempt) < n) {
            return Err(HandlerError::transient(format!(
                "flaky dependency (attempt {})",
                msg.attempt
            )));
        }
        *self
            .0
            .effects
            .lock()
            .unwrap()
            .entry(msg.id.clone())
            .or_default() += 1;
        self.0
            .attempts
            .lock()
            .unwrap()
            .insert(msg.id.clone(), msg.attempt);
        Ok(())
    }
}

/// Runs a [`TestHandler`] consumer on `ai.short`; cancel the token to stop it.
pub fn start_consumer(
    platform: &Platform,
    rec: &Arc<Recorder>,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<anyhow::Result<()>>,
) {
    let token = CancellationToken::new();
    let handle = tokio::spawn(conveyor::consumer::run(
        platform.consumer_deps(),
        &conveyor::domains::ai_tasks::queues::AI_SHORT,
        Arc::new(TestHandler(rec.clone())),
        token.clone(),
    ));
    (token, handle)
}

/// Generates one `#[tokio::test]` per backend for an `async fn(Backend)`.
#[macro_export]
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                use $crate::helpers::Backend;
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn embedded() { super::$name(Backend::Embedded).await }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn rabbitmq_mariadb() { super::$name(Backend::RabbitMariadb).await }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn rabbitmq_postgres() { super::$name(Backend::RabbitPostgres).await }
            }
        )*
    };
}

/// A TCP forwarder to a real service that a test can take down and bring back, to
/// simulate an outage without touching the shared service.
pub struct Proxy {
    pub port: u16,
    up: Arc<std::sync::atomic::AtomicBool>,
    /// Cancelled to cut every open connection; replaced on each outage.
    cut: Arc<Mutex<CancellationToken>>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    pub async fn start(target: &'static str) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let cut = Arc::new(Mutex::new(CancellationToken::new()));
        let (up2, cut2) = (up.clone(), cut.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                if !up2.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let token = cut2.lock().unwrap().clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = token.cancelled() => {}
                    }
                });
            }
        });
        Proxy {
            port,
            up,
            cut,
            task,
        }
    }

    pub fn down(&self) {
        self.up.store(false, Ordering::SeqCst);
        let mut cut = self.cut.lock().unwrap();
        cut.cancel();
        *cut = CancellationToken::new();
    }

    pub fn up(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.down();
        self.task.abort();
    }
}

impl TestApp {
    /// With RabbitMQ, consumers are separate processes: run them beside the API.
    pub fn start_consumers(&self) {
        if self.platform.settings.broker.kind != BrokerKind::Rabbitmq {
            return; // `serve` already runs them in-process
        }
        // The app's own installation (one set of services per process, as in
        // production: the same in-memory search index, the same stock store).
        let (workers, token) = (self.workers.clone(), self.shutdown.clone());
        let handle = tokio::spawn(async move { workers.run(None, token).await });
        self.consumers.lock().expect("consumers").push(handle);
    }

    /// An admin's API key.
    /// An admin's key (the same one for the app's life).
    pub async fn admin(&self) -> String {
        self.admin_key
            .get_or_init(|| async {
                conveyor::users::create(&self.platform.db, "root", 0, true)
                    .await
                    .expect("admin")
                    .1
            })
            .await
            .clone()
    }

    /// Submits `body` as the owner of `key`; it must be accepted (202). Its task id.
    pub async fn submit_id(&self, key: &str, body: serde_json::Value) -> String {
        let r = self.submit(key, body.clone()).await;
        assert_eq!(r.status(), 202, "{body}");
        r.json::<serde_json::Value>().await.unwrap()["id"]
            .as_str()
            .expect("a task id")
            .to_owned()
    }

    /// `n` copywriting tasks prompted `<prefix> <i>`; their ids.
    pub async fn copywriting_burst(&self, key: &str, n: usize, prefix: &str) -> Vec<String> {
        let mut ids = Vec::with_capacity(n);
        for i in 0..n {
            let body =
                serde_json::json!({ "kind": "copywriting", "prompt": format!("{prefix} {i}") });
            ids.push(self.submit_id(key, body).await);
        }
        ids
    }

    /// A user with `credits` and its API key.
    pub async fn user(&self, name: &str, credits: i64) -> (conveyor::users::User, String) {
        conveyor::users::create(&self.platform.db, name, credits, false)
            .await
            .expect("user")
    }

    pub async fn credits(&self, user_id: &str) -> i64 {
        use sea_orm::EntityTrait;
        conveyor::users::entity::user::Entity::find_by_id(user_id.to_owned())
            .one(&self.platform.db)
            .await
            .unwrap()
            .unwrap()
            .credits
    }

    pub async fn submit(&self, key: &str, body: serde_json::Value) -> reqwest::Response {
        self.client
            .post(self.url("/v1/tasks"))
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    pub async fn task(&self, key: &str, id: &str) -> serde_json::Value {
        self.get_json(key, &format!("/v1/tasks/{id}")).await
    }

    /// GET `path` as the owner of `key`; the JSON answer (any status).
    pub async fn get_json(&self, key: &str, path: &str) -> serde_json::Value {
        self.client
            .get(self.url(path))
            .bearer_auth(key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Polls the task until its status is `status`.
    pub async fn wait_status(&self, key: &str, id: &str, status: &str) -> serde_json::Value {
        let start = Instant::now();
        loop {
            let t = self.task(key, id).await;
            if t["status"] == status {
                return t;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "task {id} never reached {status}: {t}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}
