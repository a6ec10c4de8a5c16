//! Business domains and their registry. Each domain is one folder holding its messages,
//! queues, HTTP routes, message handlers, jobs, store, metrics and live streams, close
//! together, and exposes one [`Domain`] value that says what it brings; [`ALL`] is the
//! one list of them. `app` reads the list to declare queues, run consumers and jobs,
//! compose the router and the OpenAPI document, sample gauges and serve live streams, so
//! a new domain needs its folder, one line in [`ALL`], a migration and a config section.

pub mod ai_tasks;
pub mod flash_sale;
pub mod payments;
pub mod search_sync;

use std::sync::Arc;

use axum::Router;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::api::Core;
use crate::api::health::Probe;
use crate::broker::{DelaySpec, QueueSpec};
use crate::config::Section;
use crate::consumer::Worker;
use crate::live::Source;
use crate::ops::Panel;
use crate::platform::Platform;
use crate::telemetry::gauges::Gauge;

/// The consumers that one process runs: (queue, handler).
pub type Handlers = Vec<(&'static QueueSpec, Worker)>;

/// What a domain brings to the platform (in the spirit of a command table: data, plus
/// plain functions the composition root calls).
pub struct Domain {
    /// For logs and errors.
    pub name: &'static str,
    /// The consumer group (`conveyor consume <group>`) that runs its handlers and jobs.
    pub group: &'static str,
    /// Its work queues (each with a handler) and business delays.
    pub queues: &'static [&'static QueueSpec],
    pub delays: &'static [&'static DelaySpec],
    /// The handler of every queue in `queues`.
    pub handlers: for<'a> fn(&'a Platform) -> BoxFuture<'a, anyhow::Result<Handlers>>,
    /// Background jobs (reapers, sweeps), run with its consumers until the token fires.
    pub jobs: fn(&Platform, CancellationToken) -> Vec<BoxFuture<'static, anyhow::Result<()>>>,
    /// Its HTTP routes, with their state applied.
    pub routes: for<'a> fn(&'a Platform, &'a Core) -> BoxFuture<'a, anyhow::Result<Router>>,
    /// The OpenAPI entries of those routes.
    pub openapi: fn() -> utoipa::openapi::OpenApi,
    /// Gauges refreshed at each scrape of `/metrics`.
    pub gauges: &'static [Gauge],
    /// What the domain shows on the ops console.
    pub panels: &'static [Panel],
    /// The live stream kinds it serves over WebSocket and SSE.
    pub streams: fn(&Platform) -> Vec<Arc<dyn Source>>,
    /// The per-tenant limits it enforces (keys of `[limits]` and of admin overrides).
    pub limits: &'static [crate::limits::Limit],
    /// Its settings section (`[ai]`), if it has one.
    pub settings: Option<Section>,
    /// Dependencies of its own that `/readyz` and `/metrics` report (the search backend).
    pub probes: for<'a> fn(&'a Platform) -> BoxFuture<'a, anyhow::Result<Vec<Probe>>>,
}

impl std::fmt::Debug for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Domain")
            .field("name", &self.name)
            .field("group", &self.group)
            .finish_non_exhaustive()
    }
}

/// Every domain of this build.
pub const ALL: &[&Domain] = &[
    &ai_tasks::DOMAIN,
    &flash_sale::DOMAIN,
    &payments::DOMAIN,
    &search_sync::DOMAIN,
];

/// Nothing to run in the background.
pub fn no_jobs(_: &Platform, _: CancellationToken) -> Vec<BoxFuture<'static, anyhow::Result<()>>> {
    Vec::new()
}

/// No dependency of its own.
pub fn no_probes(_: &Platform) -> BoxFuture<'_, anyhow::Result<Vec<Probe>>> {
    Box::pin(async { Ok(Vec::new()) })
}

/// No live stream.
pub fn no_streams(_: &Platform) -> Vec<Arc<dyn Source>> {
    Vec::new()
}
