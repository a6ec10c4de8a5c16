//! Per-test settings with a unique namespace (queues, Redis keys, database, files), and
//! the clean-up of what a test created.

use std::sync::atomic::{AtomicU32, Ordering};

use conveyor::app::Platform;
use conveyor::broker::settings::BrokerKind;
use conveyor::broker::settings::QueueOverride;
use conveyor::dedupe::settings::DedupeKind;
use conveyor::settings::Settings;
use sea_orm::{ConnectionTrait, Database};

use super::*;

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
        super::videos::ffmpeg_or_simulated(&mut settings);
        settings.broker.namespace = ns.clone();
        settings.dedupe.key_prefix = ns.clone();
        settings.broker.embedded_path = dir.path().join("broker.sqlite");
        settings.storage.root = dir.path().join("objects").display().to_string();
        settings.storage.url_secret = "test-url-secret-of-thirty-two-chars!".into();
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
        self.set_max_attempts(queue, n);
        self
    }

    /// `queue`'s attempts before a message is dead-lettered, `n` in this test.
    pub fn set_max_attempts(&mut self, queue: &str, n: u32) {
        self.settings.queues.insert(
            queue.to_owned(),
            QueueOverride {
                max_attempts: Some(n),
                ..Default::default()
            },
        );
    }

    /// A platform declaring the queues of every domain of the build and the
    /// delivery-core tests' queue ([`super::WORK`]).
    pub async fn platform(&self) -> Platform {
        self.platform_with(&[]).await
    }

    /// A platform declaring the queues of every domain of the build, the delivery-core
    /// tests' queue and those of `extra`.
    pub async fn platform_with(&self, extra: &[&'static conveyor::domains::Domain]) -> Platform {
        let core: &[&'static conveyor::domains::Domain] = &[&super::CORE];
        let domains: Vec<_> = conveyor::domains::ALL
            .iter()
            .chain(core)
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
