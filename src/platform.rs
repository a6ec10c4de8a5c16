//! [`Platform`]: the connected backends of one process (database, broker, dedupe store,
//! outbox relay, processed-message fence). It knows no business domain: the topology it
//! declares is handed to it, built from the domain registry by `app`.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use sea_orm::DatabaseConnection;

use crate::broker::{self, Broker, Topology};
use crate::config::Settings;
use crate::consumer::{Deps, Fence};
use crate::db;
use crate::dedupe::{self, DedupeStore};
use crate::outbox::Relay;
use crate::tally::Tally;

/// The connected backends of one process.
#[derive(Clone)]
pub struct Platform {
    pub settings: Arc<Settings>,
    pub db: DatabaseConnection,
    pub broker: Arc<dyn Broker>,
    pub dedupe: Arc<dyn DedupeStore>,
    pub relay: Relay,
    pub fence: Fence,
    /// Per-queue totals and consumers of this platform, reported to the ops board.
    pub tally: Arc<Tally>,
    /// Per-process singletons of the modules above (a domain's stock store), made on
    /// first use and shared by that module's routes, handlers and jobs.
    shared: Arc<tokio::sync::Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>>,
}

impl Platform {
    /// Connects database (migrating if configured), broker (declaring `topology`) and
    /// dedupe store.
    pub async fn connect(settings: Settings, topology: Topology) -> anyhow::Result<Self> {
        // Install the metrics recorder now: counts recorded before the first scrape of
        // /metrics would otherwise go nowhere.
        crate::telemetry::metrics();
        let db = db::open(&settings.database).await?;
        let broker = broker::connect(&settings, topology).await?;
        broker
            .declare()
            .await
            .context("declaring the broker topology")?;
        let dedupe = dedupe::connect(&settings.dedupe)
            .await
            .context("connecting the dedupe store")?;
        let tally = Arc::new(Tally::default());
        let relay = Relay::new(
            db.clone(),
            broker.clone(),
            settings.outbox.clone(),
            tally.clone(),
        );
        let fence = Fence::start(db.clone(), settings.consumer.fence_batch);
        Ok(Platform {
            settings: Arc::new(settings),
            db,
            broker,
            dedupe,
            relay,
            fence,
            tally,
            shared: Arc::default(),
        })
    }

    /// This process's one `T`, made by `init` the first time it is asked for.
    pub async fn shared<T, F, Fut>(&self, init: F) -> anyhow::Result<Arc<T>>
    where
        T: Any + Send + Sync,
        F: FnOnce() -> Fut,
        Fut: Future<Output = anyhow::Result<T>>,
    {
        let mut shared = self.shared.lock().await;
        if let Some(existing) = shared.get(&TypeId::of::<T>())
            && let Ok(t) = existing.clone().downcast::<T>()
        {
            return Ok(t);
        }
        let made = Arc::new(init().await?);
        shared.insert(TypeId::of::<T>(), made.clone());
        Ok(made)
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
            crash_loop_after: self.settings.consumer.crash_loop_after,
            needs_fix_after: self.settings.dead_letters.needs_fix_after_replays,
            settings_poll: Duration::from_millis(self.settings.consumer.settings_poll_ms.max(100)),
            tally: self.tally.clone(),
        }
    }

    /// A second pool on the same database with `connections` connections, for work that
    /// wants connections of its own (SQLite has one connection, which is shared).
    pub async fn own_pool(&self, connections: u32) -> anyhow::Result<DatabaseConnection> {
        if self.db.get_database_backend() == sea_orm::DatabaseBackend::Sqlite {
            return Ok(self.db.clone());
        }
        db::connect_url(&self.settings.database.url, connections)
            .await
            .context("opening a dedicated database pool")
    }
}
