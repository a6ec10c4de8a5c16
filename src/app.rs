//! Start-up and wiring: [`Platform`] connects the backends the configuration names;
//! [`Application`] binds the HTTP API and runs it with the outbox relay and, on the
//! embedded broker, every consumer in the same process.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use sea_orm::DatabaseConnection;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::broker::{self, Broker, Topology};
use crate::config::{BrokerKind, Settings};
use crate::consumer::{self, Deps, Fence};
use crate::dedupe::{self, DedupeStore};
use crate::outbox::Relay;
use crate::{db, domains};

/// The connected backends of one process.
#[derive(Clone)]
pub struct Platform {
    pub settings: Arc<Settings>,
    pub db: DatabaseConnection,
    pub broker: Arc<dyn Broker>,
    pub dedupe: Arc<dyn DedupeStore>,
    pub relay: Relay,
    pub fence: Fence,
}

impl Platform {
    /// Connects database (migrating if configured), broker (declaring the topology) and
    /// dedupe store.
    pub async fn connect(settings: Settings) -> anyhow::Result<Self> {
        // Install the metrics recorder now: counts recorded before the first scrape of
        // /metrics would otherwise go nowhere.
        crate::telemetry::metrics();
        let db = db::connect(&settings.database).await?;
        if settings.database.migrate_on_start {
            db::migrate(&db).await?;
        }
        let topology = Topology::from_settings(&settings);
        let broker = broker::connect(&settings, topology).await?;
        broker
            .declare()
            .await
            .context("declaring the broker topology")?;
        let dedupe = dedupe::connect(&settings.dedupe)
            .await
            .context("connecting the dedupe store")?;
        let relay = Relay::new(db.clone(), broker.clone(), settings.outbox.clone());
        let fence = Fence::start(db.clone(), settings.consumer.fence_batch);
        Ok(Platform {
            settings: Arc::new(settings),
            db,
            broker,
            dedupe,
            relay,
            fence,
        })
    }

    /// What the consumer runtime needs.
    pub fn consumer_deps(&self) -> Deps {
        Deps {
            db: self.db.clone(),
            broker: self.broker.clone(),
            dedupe: self.dedupe.clone(),
            fence: self.settings.consumer.db_fence.then(|| self.fence.clone()),
            lease: Duration::from_millis(self.settings.dedupe.lease_ms),
            done_ttl: Duration::from_secs(self.settings.dedupe.done_ttl_secs),
            max_payload_bytes: self.settings.broker.max_payload_bytes,
            shutdown_grace: Duration::from_millis(self.settings.consumer.shutdown_grace_ms),
        }
    }

    /// Runs the consumers of `groups` (`None`: every group; empty: none) and the outbox
    /// relay until `shutdown`; returns once they stopped.
    pub async fn run_workers(
        &self,
        groups: Option<&[String]>,
        shutdown: CancellationToken,
    ) -> anyhow::Result<()> {
        let mut tasks = JoinSet::new();
        for job in domains::jobs(self, groups, &shutdown) {
            tasks.spawn(async move { job.await.map_err(anyhow::Error::from).and_then(|r| r) });
        }
        for (queue, handler) in domains::handlers(self)? {
            if groups.is_some_and(|g| !g.iter().any(|g| g == queue.group)) {
                continue;
            }
            let (deps, token) = (self.consumer_deps(), shutdown.clone());
            tasks.spawn(async move { consumer::run(deps, queue, handler, token).await });
        }
        let relay = self.relay.clone();
        let token = shutdown.clone();
        tasks.spawn(async move {
            relay.run(token).await;
            Ok(())
        });
        tasks.spawn(crate::housekeeping::run(self.db.clone(), shutdown.clone()));
        let mut first_error = None;
        while let Some(joined) = tasks.join_next().await {
            let result = joined.map_err(anyhow::Error::from).and_then(|r| r);
            if let Err(e) = result {
                tracing::error!(error = %e, "worker stopped with an error");
                shutdown.cancel();
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Shared state of HTTP handlers.
#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub db: DatabaseConnection,
    pub broker: Arc<dyn Broker>,
    pub dedupe: Arc<dyn DedupeStore>,
    pub relay: Relay,
    pub auth_cache: Arc<crate::api::auth::AuthCache>,
    pub submitter: crate::domains::ai_tasks::submitter::Submitter,
    /// This instance's share of the task-event fan-out (WebSocket, SSE).
    pub hub: crate::live::Hub,
    /// Cancelled at shutdown: long-lived streams close with a proper close frame.
    pub shutdown: CancellationToken,
    /// Paces dead-letter replays through the admin API.
    pub replay_limiter: Arc<crate::dead_letters::operate::ReplayLimiter>,
}

impl AppState {
    fn new(p: &Platform, hub: crate::live::Hub, writers_db: DatabaseConnection) -> Self {
        AppState {
            settings: p.settings.clone(),
            db: p.db.clone(),
            broker: p.broker.clone(),
            dedupe: p.dedupe.clone(),
            relay: p.relay.clone(),
            auth_cache: Arc::default(),
            submitter: crate::domains::ai_tasks::submitter::Submitter::start(
                writers_db,
                p.broker.clone(),
                p.relay.clone(),
                p.settings.broker.max_payload_bytes,
                p.settings.database.group_commit_writers,
                std::time::Duration::from_millis(p.settings.database.group_commit_linger_ms),
            ),
            hub,
            shutdown: CancellationToken::new(),
            replay_limiter: Arc::new(crate::dead_letters::operate::replay_limiter(
                p.settings.dead_letters.replay_per_second,
            )),
        }
    }
}

/// A pool with one connection per submission writer, so each writer keeps to one
/// server connection: every batch size is its own prepared statement, and on the shared
/// pool (which hands out idle connections in turn) every connection prepared every
/// size. SQLite has one connection, which the writers must share.
async fn writers_pool(p: &Platform) -> anyhow::Result<DatabaseConnection> {
    if p.db.get_database_backend() == sea_orm::DatabaseBackend::Sqlite {
        return Ok(p.db.clone());
    }
    db::connect_url(
        &p.settings.database.url,
        p.settings.database.group_commit_writers,
    )
    .await
    .context("opening the submission writers' pool")
}

/// The API server, bound and ready to run.
pub struct Application {
    platform: Platform,
    hub: crate::live::Hub,
    /// The submission writers' own pool (see [`writers_pool`]).
    writers_db: DatabaseConnection,
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
}

impl Application {
    /// Connects the platform and binds `server.host:server.port` (port 0 picks one).
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let bind = format!("{}:{}", settings.server.host, settings.server.port);
        let platform = Platform::connect(settings).await?;
        let listener = tokio::net::TcpListener::bind(&bind)
            .await
            .with_context(|| format!("binding {bind} (server.host, server.port)"))?;
        let addr = listener.local_addr()?;
        let hub = crate::live::Hub::start(platform.broker.clone())
            .await
            .context("listening to task events")?;
        let writers_db = writers_pool(&platform).await?;
        Ok(Application {
            platform,
            hub,
            writers_db,
            listener,
            addr,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    /// Serves until `shutdown`: in-flight requests get `server.shutdown_grace_ms`, then
    /// consumers drain, the relay flushes and connections close.
    pub async fn run_until(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let Application {
            platform,
            hub,
            writers_db,
            listener,
            addr,
        } = self;
        let mut state = AppState::new(&platform, hub, writers_db);
        state.shutdown = shutdown.clone();
        let router = crate::api::router(state);
        // The embedded broker lives in this process, so its consumers must too; with
        // RabbitMQ consumers are separate processes (`conveyor consume`), and the API
        // process only relays its outbox.
        let in_process = platform.settings.broker.kind == BrokerKind::Embedded;
        let workers = {
            let (p, token) = (platform.clone(), shutdown.clone());
            tokio::spawn(async move {
                let groups: Option<&[String]> = if in_process { None } else { Some(&[]) };
                p.run_workers(groups, token).await
            })
        };
        tracing::info!(%addr, broker = ?platform.settings.broker.kind, "conveyor API listening");
        let grace = Duration::from_millis(platform.settings.server.shutdown_grace_ms);
        let token = shutdown.clone();
        let server = axum::serve(listener, router)
            .with_graceful_shutdown(async move { token.cancelled().await });
        let served = tokio::select! {
            r = server => r.context("HTTP server"),
            // Requests still open after the grace period are cut off.
            _ = async { shutdown.cancelled().await; tokio::time::sleep(grace).await } => Ok(()),
        };
        shutdown.cancel();
        let worked = workers.await.context("workers task")?;
        platform.broker.close().await;
        tracing::info!("conveyor API stopped");
        served.and(worked)
    }
}
