//! [`Platform`]: the connected backends of one process (database, broker, dedupe store,
//! outbox relay, processed-message fence, media store, the AI providers). It knows no
//! business domain: the topology it declares is handed to it, built from the domain
//! registry by `app`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use sea_orm::DatabaseConnection;

use crate::broker::{self, Broker, Topology};
use crate::consumer::{Deps, Fence};
use crate::db;
use crate::dedupe::{self, DedupeStore};
use crate::outbox::Relay;
use crate::providers::Providers;
use crate::settings::Settings;
use crate::storage::Storage;
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
    /// Media files (uploads, generated outputs).
    pub storage: Arc<Storage>,
    /// The AI providers by name, built once per process: every domain that calls one
    /// (a task's steps, a search by meaning's query) shares their fleet limits.
    pub providers: Providers,
    /// Limit values for tenants: `[limits]`, the plans of `[plans]` (`free` always among
    /// them), admins' overrides (one cache for the process's API and consumers).
    pub limits: crate::limits::Values,
    /// The event seam: domains record their events through it, and the listeners the
    /// installed domains registered hear them in the recorder's transaction (filled by
    /// `app` once every domain is installed).
    pub events: crate::events::Events,
}

impl Platform {
    /// Connects database (migrating if configured), broker (declaring `topology`) and
    /// dedupe store.
    pub async fn connect(settings: Settings, topology: Topology) -> anyhow::Result<Self> {
        // Install the metrics recorder now: counts recorded before the first scrape of
        // /metrics would otherwise go nowhere.
        crate::telemetry::metrics();
        let db = db::open(&settings.database).await?;
        let broker = broker::connect(&settings.broker, topology).await?;
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
        let storage = Storage::open(&settings.storage).context("opening the media store")?;
        let limits = crate::limits::Values::new(
            settings.limits.clone(),
            db.clone(),
            crate::plans::Plans::new(&settings.plans),
        );
        let providers = Providers::connect(
            &settings,
            db.clone(),
            storage.clone(),
            limits.plans().clone(),
        )
        .await
        .context("building the AI providers")?;
        Ok(Platform {
            limits,
            settings: Arc::new(settings),
            db,
            broker,
            dedupe,
            relay,
            fence,
            tally,
            storage,
            providers,
            events: crate::events::Events::default(),
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
            crash_loop_after: self.settings.consumer.crash_loop_after,
            needs_fix_after: self.settings.dead_letters.needs_fix_after_replays,
            settings_poll: Duration::from_millis(self.settings.consumer.settings_poll_ms.max(100)),
            tally: self.tally.clone(),
        }
    }

    /// A second pool on the same database with `connections` connections, for work that
    /// wants connections of its own (SQLite has one connection, which is shared).
    pub async fn own_pool(&self, connections: u32) -> anyhow::Result<DatabaseConnection> {
        own_pool(
            self.db.clone(),
            self.settings.database.url.clone(),
            connections,
        )
        .await
    }

    /// [`Platform::own_pool`], opened when the returned future is awaited (by a part of a
    /// domain only some processes run).
    pub fn own_pool_later(
        &self,
        connections: u32,
    ) -> impl std::future::Future<Output = anyhow::Result<DatabaseConnection>> + Send + 'static
    {
        own_pool(
            self.db.clone(),
            self.settings.database.url.clone(),
            connections,
        )
    }
}

async fn own_pool(
    shared: DatabaseConnection,
    url: String,
    connections: u32,
) -> anyhow::Result<DatabaseConnection> {
    if shared.get_database_backend() == sea_orm::DatabaseBackend::Sqlite {
        return Ok(shared);
    }
    db::connect_url(&url, connections)
        .await
        .context("opening a dedicated database pool")
}
