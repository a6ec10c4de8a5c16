//! What the HTTP benchmarks share: a stretch of load's latencies, its summary, and the
//! check that a service listens.

#![allow(dead_code)] // each bench uses what it needs

pub mod cpu;
pub mod lapin;
pub mod memory;
pub mod peers;
pub mod perftest;
pub mod pg_stats;

use std::time::Duration;

/// Latencies (ms) and wall time of one stretch of load.
pub struct Round {
    pub latencies: Vec<f64>,
    pub secs: f64,
}

/// (req/s, p50 ms, p99 ms) over several rounds.
pub fn summary(rounds: Vec<Round>) -> (f64, f64, f64) {
    let secs: f64 = rounds.iter().map(|r| r.secs).sum();
    let mut all: Vec<f64> = rounds.into_iter().flat_map(|r| r.latencies).collect();
    all.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| all[((all.len() - 1) as f64 * p) as usize];
    (all.len() as f64 / secs, pct(0.5), pct(0.99))
}

/// Whether something accepts TCP connections at `addr`.
pub async fn up(addr: &str) -> bool {
    matches!(
        tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr)).await,
        Ok(Ok(_))
    )
}

/// A bench run's stack: settings for RabbitMQ + Redis under a namespace of its own and a
/// PostgreSQL database of its own (created here, dropped by [`Stack::teardown`]).
pub struct Stack {
    pub settings: conveyor::settings::Settings,
    admin: sea_orm::DatabaseConnection,
    db_name: String,
    _dir: tempfile::TempDir,
}

impl Stack {
    /// `None` (and a line saying why) when a service does not answer.
    pub async fn start(bench: &str) -> Option<Stack> {
        use sea_orm::ConnectionTrait as _;
        if !(up("127.0.0.1:5672").await && up("127.0.0.1:6379").await && up("127.0.0.1:5432").await)
        {
            println!(
                "{bench} bench needs RabbitMQ, Redis and PostgreSQL on localhost (scripts/services.sh up)"
            );
            return None;
        }
        let name = format!("bench{bench}{}", std::process::id()).replace('_', "");
        let dir = tempfile::tempdir().unwrap();
        let mut s = conveyor::settings::Settings::load_from(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/config")),
            "local",
            std::env::vars(),
        )
        .unwrap();
        s.broker.kind = conveyor::broker::settings::BrokerKind::Rabbitmq;
        s.dedupe.kind = conveyor::dedupe::settings::DedupeKind::Redis;
        // The platform's throughput, not one tenant's budget.
        s.limits =
            conveyor::limits::declared::unlimited(&conveyor::app::limits(conveyor::domains::ALL));
        s.broker.namespace = name.clone();
        s.dedupe.key_prefix = name.clone();
        s.broker.embedded_path = dir.path().join("broker.sqlite");
        s.storage.root = dir.path().join("objects").display().to_string();
        s.server.port = 0;
        s.log.level = "error".into();
        s.database.max_connections = 32;
        let admin = sea_orm::Database::connect("postgres://postgres@127.0.0.1:5432/postgres")
            .await
            .unwrap();
        admin
            .execute_unprepared(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        s.database.url = format!("postgres://postgres@127.0.0.1:5432/{name}");
        Some(Stack {
            settings: s,
            admin,
            db_name: name,
            _dir: dir,
        })
    }

    /// Deletes the namespace's queues and exchanges and drops the database.
    pub async fn teardown(self) {
        use sea_orm::ConnectionTrait as _;
        let s = &self.settings;
        let topology = conveyor::app::topology(s, conveyor::domains::ALL);
        if let Ok(b) = conveyor::broker::connect(&s.broker, topology).await {
            let _ = b.teardown().await;
            b.close().await;
        }
        let _ = self
            .admin
            .execute_unprepared(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.db_name
            ))
            .await;
    }
}

/// Serves `app` on a free loopback port until the token fires; the URL of its `/floor`.
pub async fn serve(app: axum::Router) -> (String, tokio_util::sync::CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let token = tokio_util::sync::CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { t.cancelled().await })
            .await
    });
    (format!("http://{addr}/floor"), token)
}

/// The floor: one insert + commit per request, nothing else.
pub async fn floor_server(
    db: sea_orm::DatabaseConnection,
) -> (String, tokio_util::sync::CancellationToken) {
    use sea_orm::ConnectionTrait as _;
    db.execute_unprepared(
        "CREATE TABLE IF NOT EXISTS bench_floor (id VARCHAR(36) PRIMARY KEY, body TEXT NOT NULL)",
    )
    .await
    .unwrap();
    let app = axum::Router::new()
        .route(
            "/floor",
            axum::routing::post(
                |axum::extract::State(db): axum::extract::State<sea_orm::DatabaseConnection>,
                 body: String| async move {
                    let backend = db.get_database_backend();
                    db.execute_raw(sea_orm::Statement::from_sql_and_values(
                        backend,
                        if backend == sea_orm::DatabaseBackend::Postgres {
                            "INSERT INTO bench_floor (id, body) VALUES ($1, $2)"
                        } else {
                            "INSERT INTO bench_floor (id, body) VALUES (?, ?)"
                        },
                        [uuid::Uuid::now_v7().to_string().into(), body.into()],
                    ))
                    .await
                    .map(|_| "ok")
                    .map_err(|e| (axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
                },
            ),
        )
        .with_state(db);
    serve(app).await
}

/// Raises the soft open-file limit to the hard one; returns the limit now in force.
pub fn raise_file_limit() -> u64 {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let now = getrlimit(Resource::Nofile);
    let _ = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: now.maximum,
            maximum: now.maximum,
        },
    );
    getrlimit(Resource::Nofile).current.unwrap_or(1024)
}

/// The API and the `ai` consumers of two processes (the API's own, and a second
/// platform of its own, as `conveyor serve` beside two `conveyor consume ai`), with a
/// tenant of ample credits.
pub struct TwoConsumers {
    /// `http://host:port` of the API.
    pub base: String,
    pub db: sea_orm::DatabaseConnection,
    /// The tenant's API key.
    pub key: String,
    stop: tokio_util::sync::CancellationToken,
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
    workers: [tokio::task::JoinHandle<anyhow::Result<()>>; 2],
}

impl TwoConsumers {
    pub async fn start(s: &conveyor::settings::Settings) -> TwoConsumers {
        let a = conveyor::app::Application::build(s.clone()).await.unwrap();
        let b = conveyor::app::Application::build(s.clone()).await.unwrap();
        let base = format!("http://{}", a.addr());
        let db = a.platform().db.clone();
        let (_, key) = conveyor::users::create(&db, "studio", 1_000_000, false)
            .await
            .unwrap();
        let stop = tokio_util::sync::CancellationToken::new();
        let workers = [a.platform().clone(), b.platform().clone()].map(|p| {
            let t = stop.clone();
            tokio::spawn(async move {
                conveyor::app::run_workers(&p, conveyor::domains::ALL, Some(&["ai".to_owned()]), t)
                    .await
            })
        });
        let server = tokio::spawn(a.run_until(stop.clone()));
        TwoConsumers {
            base,
            db,
            key,
            stop,
            server,
            workers,
        }
    }

    /// Stops the API and both consumers.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.server.await;
        for w in self.workers {
            let _ = w.await;
        }
    }
}
