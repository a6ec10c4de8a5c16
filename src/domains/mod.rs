//! Business domains and their registry. A domain is one folder (the skeleton every domain
//! follows is written down in `docs/architecture.md`) that exposes one [`Domain`] value;
//! [`ALL`] is the one list of them. `app` reads the list to declare queues, install each
//! domain once per process, run its consumers and jobs, compose the router and the
//! OpenAPI document, sample gauges, serve live streams, mount CLI commands and trim old
//! rows: a new domain needs its folder, one line in [`ALL`], its migration(s) and its
//! config section.
//!
//! The contract is small on purpose. What every domain must say is [`Domain::new`]'s
//! arguments: its name, its consumer group, its queues and its [`Install`] step, which
//! builds the domain's per-process service once and hands back what the process runs
//! ([`Installed`]). Everything else has a default and a `const` setter; a capability
//! the platform grows is a field here with its default, and no domain changes.

pub mod ai_tasks;
pub mod canary;
pub mod flash_sale;
pub mod media;
pub mod payments;
pub mod search_sync;
pub mod webhooks;

use std::sync::Arc;

use axum::Router;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::api::Core;
use crate::api::health::Probe;
use crate::broker::{DelaySpec, QueueSpec, Topology};
use crate::consumer::Worker;
use crate::contract::{ConfigureDoc, Feature};
use crate::events::{AnyListener, EventType, Listener};
use crate::housekeeping::Retention;
use crate::limits::Limit;
use crate::live::Source;
use crate::ops::Panel;
use crate::platform::Platform;
use crate::settings::Section;
use crate::settings::Settings;
use crate::telemetry::gauges::Gauge;

/// The consumers that one process runs: (queue, handler).
pub type Handlers = Vec<(&'static QueueSpec, Worker)>;

/// A background job (a reaper, a sweep), started with the process's shutdown token.
pub type Job = Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, anyhow::Result<()>> + Send>;

/// The domain's routes, given the HTTP kit's state; built only by a process that serves
/// HTTP, so what only routes use (a writers' pool) is made here, not at install.
pub type Routes = Box<dyn FnOnce(Core) -> BoxFuture<'static, anyhow::Result<Router>> + Send>;

/// Builds a domain's per-process service once (connections, caches, stores it owns) and
/// says what this process may run of it.
pub type Install = for<'a> fn(&'a Platform) -> BoxFuture<'a, anyhow::Result<Installed>>;

/// What a domain's install step hands back. Every part is optional; the process runs
/// what its role wants (the API process its routes, streams and probes; a consumer
/// process the handlers of its queues and its group's jobs).
#[derive(Default)]
pub struct Installed {
    pub handlers: Handlers,
    pub routes: Option<Routes>,
    pub jobs: Vec<Job>,
    pub streams: Vec<Arc<dyn Source>>,
    pub probes: Vec<Probe>,
    /// Its reactions to events (its own or other domains'), heard in the recorder's
    /// transaction (see `crate::events`).
    pub listeners: Vec<AnyListener>,
}

impl Installed {
    /// The handler of one of its queues.
    pub fn handler(mut self, queue: &'static QueueSpec, worker: Worker) -> Self {
        self.handlers.push((queue, worker));
        self
    }

    pub fn routes(
        mut self,
        routes: impl FnOnce(Core) -> BoxFuture<'static, anyhow::Result<Router>> + Send + 'static,
    ) -> Self {
        self.routes = Some(Box::new(routes));
        self
    }

    pub fn job(
        mut self,
        job: impl FnOnce(CancellationToken) -> BoxFuture<'static, anyhow::Result<()>> + Send + 'static,
    ) -> Self {
        self.jobs.push(Box::new(job));
        self
    }

    pub fn stream(mut self, source: Arc<dyn Source>) -> Self {
        self.streams.push(source);
        self
    }

    pub fn probe(mut self, probe: Probe) -> Self {
        self.probes.push(probe);
        self
    }

    /// A listener of events, registered with the process's event seam.
    pub fn listener(mut self, listener: impl Listener) -> Self {
        self.listeners.push(AnyListener::new(listener));
        self
    }
}

/// What a domain's command runs with: the checked settings and the build's topology
/// (queue and delay names, delays as configured).
pub struct CliContext {
    pub settings: Settings,
    pub topology: Topology,
}

/// A domain's command line: `conveyor <name> …`, parsed by clap.
#[derive(Clone, Copy)]
pub struct Cli {
    /// The subcommand, with its arguments (clap's builder, usually from a derive).
    pub command: fn() -> clap::Command,
    /// Runs it with what clap matched.
    pub run: for<'a> fn(&'a CliContext, &'a clap::ArgMatches) -> BoxFuture<'a, anyhow::Result<()>>,
}

/// What a domain brings to the platform: data, plus plain functions the composition
/// root calls. Build one with [`Domain::new`] and the setters. A domain is a [`Feature`]
/// (the parts every entry of the platform has: limits, gauges, panels, retention, OpenAPI
/// entries) plus what only a business flow has: queues, a consumer group, an install
/// step, delays, a settings section, a command and the event types it records.
pub struct Domain {
    /// For logs and errors.
    pub name: &'static str,
    /// The consumer group (`conveyor consume <group>`) that runs its handlers and jobs.
    pub group: &'static str,
    /// Its work queues, each with a handler in [`Installed::handlers`].
    pub queues: &'static [&'static QueueSpec],
    pub install: Install,
    /// Business delays (one queue per delay, TTL back into a work queue).
    pub delays: &'static [&'static DelaySpec],
    /// Its settings section (`[ai]`), if it has one.
    pub settings: Option<Section>,
    /// Its CLI subcommand, mounted as `conveyor <command>`.
    pub cli: Option<Cli>,
    /// The event types it records (`crate::events`): a listener hears them, and the
    /// public ones are what tenants' webhook endpoints may subscribe to.
    pub events: &'static [&'static EventType],
    /// The parts every entry has, read by the composition root as for a platform
    /// feature (its routes come from the install step, not from `serve`).
    pub feature: Feature,
}

impl Domain {
    /// A domain with everything optional at its default.
    pub const fn new(
        name: &'static str,
        group: &'static str,
        queues: &'static [&'static QueueSpec],
        install: Install,
    ) -> Self {
        Domain {
            name,
            group,
            queues,
            install,
            delays: &[],
            settings: None,
            cli: None,
            events: &[],
            feature: Feature::new(name),
        }
    }

    pub const fn delays(mut self, delays: &'static [&'static DelaySpec]) -> Self {
        self.delays = delays;
        self
    }

    pub const fn settings(mut self, section: Section) -> Self {
        self.settings = Some(section);
        self
    }

    pub const fn cli(mut self, cli: Cli) -> Self {
        self.cli = Some(cli);
        self
    }

    pub const fn events(mut self, types: &'static [&'static EventType]) -> Self {
        self.events = types;
        self
    }

    // The parts every entry has: `Feature`'s setters, on the domain.

    pub const fn limits(mut self, limits: &'static [Limit]) -> Self {
        self.feature = self.feature.limits(limits);
        self
    }

    pub const fn gauges(mut self, gauges: &'static [Gauge]) -> Self {
        self.feature = self.feature.gauges(gauges);
        self
    }

    pub const fn panels(mut self, panels: &'static [Panel]) -> Self {
        self.feature = self.feature.panels(panels);
        self
    }

    pub const fn retention(mut self, rules: &'static [Retention]) -> Self {
        self.feature = self.feature.retention(rules);
        self
    }

    pub const fn openapi(mut self, doc: fn() -> utoipa::openapi::OpenApi) -> Self {
        self.feature = self.feature.openapi(doc);
        self
    }

    /// Lets the configuration shape the document (see [`Feature::configured_openapi`]).
    pub const fn configured_openapi(mut self, f: ConfigureDoc) -> Self {
        self.feature = self.feature.configured_openapi(f);
        self
    }

    pub const fn streaming(mut self, prefixes: &'static [&'static str]) -> Self {
        self.feature = self.feature.streaming(prefixes);
        self
    }
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
    &webhooks::DOMAIN,
    &canary::DOMAIN,
    &media::DOMAIN,
];
