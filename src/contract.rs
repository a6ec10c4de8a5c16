//! How a feature plugs into the platform: one contract for the platform's own features
//! (accounts, live streams, dead letters, the ops console, health, the tables
//! housekeeping trims; declared in `crate::features`) and for the business domains
//! (`crate::domains::Domain`, which is a [`Feature`] plus queues, a settings section, a
//! command and an install step). The composition root reads every entry the same way:
//! it collects their limits, gauges, panels, retention and OpenAPI entries, gathers what
//! every entry serves ([`Serving`]) and builds each entry's routes from it, in one loop.
//!
//! It sits above the modules it wires (`api`, `live`, `ops`, `platform`) and below the
//! entries, so a feature declares itself without naming the registry or another entry.

use std::sync::Arc;

use axum::Router;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::api::Core;
use crate::api::health::Probe;
use crate::broker::QueueSpec;
use crate::bus::Bus;
use crate::housekeeping::Retention;
use crate::limits::Limit;
use crate::live::Sources;
use crate::ops::Panel;
use crate::platform::Platform;
use crate::settings::Settings;
use crate::telemetry::gauges::Gauge;

/// Builds a feature's routes in a process that serves HTTP, and starts what only they
/// need (the ops board, the live hub, a cache's notices), from the platform and what the
/// composition gathered from every entry.
pub type Serve = fn(&Platform, &Serving) -> anyhow::Result<Router>;

/// What a feature runs in every process that runs workers (the API process too), beside
/// the consumers of `consumed` (this process's queues, maybe none): its tasks, each
/// ended by the shutdown token.
pub type Work = fn(
    &Platform,
    consumed: &[&'static QueueSpec],
    shutdown: CancellationToken,
) -> Vec<BoxFuture<'static, anyhow::Result<()>>>;

/// What the composition of the HTTP API gathered from every entry, handed to each
/// entry's routes: the HTTP kit's state and the parts that only make sense whole (every
/// stream kind, probe, gauge and panel of the build).
#[derive(Clone)]
pub struct Serving {
    pub core: Core,
    /// This process's listener on the cluster bus.
    pub bus: Bus,
    /// Every entry's live stream kinds.
    pub sources: Sources,
    /// Every entry's optional dependencies, for `/readyz`.
    pub probes: Arc<[Probe]>,
    /// Every entry's gauges, sampled at each scrape of `/metrics`.
    pub gauges: Arc<[Gauge]>,
    /// Every entry's panels on the ops console.
    pub panels: Arc<[Panel]>,
}

/// What the configuration and the build decide in the OpenAPI document: an entry's
/// configured names (products, plans) and every declared limit (the keys an override
/// may name) become enums, so a generated client never sends a name the server refuses.
pub struct DocContext<'a> {
    pub settings: &'a Settings,
    /// Every per-tenant limit of this build.
    pub limits: &'a [Limit],
}

/// Puts what the configuration decides into the document (see [`DocContext`]).
pub type ConfigureDoc = fn(&DocContext<'_>, &mut utoipa::openapi::OpenApi);

/// What an entry brings to the platform, as data plus plain functions the composition
/// root calls. Build one with [`Feature::new`] and the `const` setters; every part has a
/// default, and a capability the platform grows is a field here with its default.
#[derive(Clone, Copy)]
pub struct Feature {
    /// For logs and errors.
    pub name: &'static str,
    /// Its routes, for a feature that needs nothing installed first (a domain's routes
    /// come from its install step, which builds its service once per process).
    pub serve: Option<Serve>,
    /// What it runs beside the consumers (a keeper, a reporter).
    pub work: Option<Work>,
    /// The per-tenant limits it enforces (keys of `[limits]` and of admin overrides).
    pub limits: &'static [Limit],
    /// Gauges refreshed at each scrape of `/metrics`.
    pub gauges: &'static [Gauge],
    /// What it shows on the ops console.
    pub panels: &'static [Panel],
    /// Tables of its own that housekeeping trims.
    pub retention: &'static [Retention],
    /// Tables it trims after a time the configuration sets.
    pub configured_retention: Option<fn(&Settings) -> Vec<Retention>>,
    /// The OpenAPI entries of its routes.
    pub openapi: fn() -> utoipa::openapi::OpenApi,
    /// What of its document the configuration decides, applied to the whole document
    /// once it is put together.
    pub configured_openapi: Option<ConfigureDoc>,
    /// Path prefixes of routes that stream large bodies (uploads, downloads): no
    /// whole-request deadline (`server.request_timeout_ms`); they bound idleness instead.
    pub streaming: &'static [&'static str],
}

impl Feature {
    /// A feature with everything at its default: no routes, limits or tables.
    pub const fn new(name: &'static str) -> Self {
        Feature {
            name,
            serve: None,
            work: None,
            limits: &[],
            gauges: &[],
            panels: &[],
            retention: &[],
            configured_retention: None,
            openapi: no_openapi,
            configured_openapi: None,
            streaming: &[],
        }
    }

    pub const fn serve(mut self, serve: Serve) -> Self {
        self.serve = Some(serve);
        self
    }

    pub const fn work(mut self, work: Work) -> Self {
        self.work = Some(work);
        self
    }

    pub const fn limits(mut self, limits: &'static [Limit]) -> Self {
        self.limits = limits;
        self
    }

    pub const fn gauges(mut self, gauges: &'static [Gauge]) -> Self {
        self.gauges = gauges;
        self
    }

    pub const fn panels(mut self, panels: &'static [Panel]) -> Self {
        self.panels = panels;
        self
    }

    pub const fn retention(mut self, rules: &'static [Retention]) -> Self {
        self.retention = rules;
        self
    }

    pub const fn configured_retention(mut self, rules: fn(&Settings) -> Vec<Retention>) -> Self {
        self.configured_retention = Some(rules);
        self
    }

    pub const fn openapi(mut self, doc: fn() -> utoipa::openapi::OpenApi) -> Self {
        self.openapi = doc;
        self
    }

    pub const fn configured_openapi(mut self, configure: ConfigureDoc) -> Self {
        self.configured_openapi = Some(configure);
        self
    }

    pub const fn streaming(mut self, prefixes: &'static [&'static str]) -> Self {
        self.streaming = prefixes;
        self
    }

    /// Its housekeeping rules under `settings`: the fixed ones and the configured ones.
    pub fn rules(&self, settings: &Settings) -> Vec<Retention> {
        let configured = self.configured_retention.map(|f| f(settings));
        self.retention
            .iter()
            .copied()
            .chain(configured.into_iter().flatten())
            .collect()
    }
}

impl std::fmt::Debug for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feature")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// No routes, so no OpenAPI entries.
pub fn no_openapi() -> utoipa::openapi::OpenApi {
    utoipa::openapi::OpenApiBuilder::new().build()
}
