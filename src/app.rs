//! The composition root: the one place that names every domain and every route module.
//! It builds the topology from the domain registry, connects the [`Platform`], runs
//! consumers and jobs ([`run_workers`]), and composes the HTTP API ([`Application`]):
//! each module's router (with its own state), one OpenAPI document merged from theirs,
//! the live-stream sources and the gauges the domains bring.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use utoipa::OpenApi as _;

use crate::api::health::Probe;
use crate::api::{self, Core};
use crate::broker::Topology;
use crate::broker::settings::BrokerKind;
use crate::domains::{self, Domain, Handlers, Installed, Job, Routes};
use crate::housekeeping::Retention;
use crate::settings::Section;
use crate::settings::Settings;
use crate::telemetry::gauges::{self, Gauge};
use crate::{account, consumer, dead_letters, live, ops};

pub use crate::platform::Platform;

/// The topology of `domains`: every queue and delay they declare.
pub fn topology(settings: &Settings, domains: &[&Domain]) -> Topology {
    let queues: Vec<_> = domains
        .iter()
        .flat_map(|d| d.queues.iter().copied())
        .collect();
    let delays: Vec<_> = domains
        .iter()
        .flat_map(|d| d.delays.iter().copied())
        .collect();
    Topology::new(&settings.broker, &settings.queues, &queues, &delays)
}

/// The consumer groups of `domains`, for `conveyor consume <group>`.
pub fn groups(domains: &[&Domain]) -> Vec<&'static str> {
    let mut g: Vec<&'static str> = Vec::new();
    for d in domains {
        if !g.contains(&d.group) {
            g.push(d.group);
        }
    }
    g
}

/// The settings sections of `domains`.
pub fn sections(domains: &[&Domain]) -> Vec<Section> {
    domains.iter().filter_map(|d| d.settings).collect()
}

/// Connects the platform with the topology of every domain of this build.
pub async fn platform(settings: Settings) -> anyhow::Result<Platform> {
    settings.check_sections(&sections(domains::ALL))?;
    let topology = topology(&settings, domains::ALL);
    Platform::connect(settings, topology).await
}

/// Installs every domain in this process: each builds its service once and says what
/// the process may run of it.
pub async fn install(
    platform: &Platform,
    domains: &[&'static Domain],
) -> anyhow::Result<Vec<(&'static Domain, Installed)>> {
    let mut out = Vec::with_capacity(domains.len());
    for domain in domains {
        let installed = (domain.install)(platform)
            .await
            .with_context(|| format!("installing the {} domain", domain.name))?;
        out.push((*domain, installed));
    }
    Ok(out)
}

/// The housekeeping rules of this build: the platform's tables and the domains'.
pub fn retention(settings: &Settings, domains: &[&'static Domain]) -> Vec<Retention> {
    [
        crate::api::idempotency::RETENTION,
        crate::outbox::RETENTION,
        live::tickets::RETENTION,
    ]
    .into_iter()
    .chain(consumer::retention(settings.consumer.fence_retention_days))
    .chain(domains.iter().flat_map(|d| d.retention.iter().copied()))
    .collect()
}

/// Installs `domains` and runs their consumers and jobs in `groups` (`None`: every
/// group; empty: none), the outbox relay and housekeeping until `shutdown`.
pub async fn run_workers(
    platform: &Platform,
    domains: &[&'static Domain],
    groups: Option<&[String]>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let installed = install(platform, domains).await?;
    let workers = installed
        .into_iter()
        .map(|(d, i)| (d, i.handlers, i.jobs))
        .collect();
    let rules = retention(&platform.settings, domains);
    serve_workers(platform, workers, rules, groups, shutdown).await
}

/// What one domain runs in a worker process: its handlers and its jobs.
type Workers = (&'static Domain, Handlers, Vec<Job>);

/// Runs installed consumers and jobs (see [`run_workers`]).
async fn serve_workers(
    platform: &Platform,
    workers: Vec<Workers>,
    rules: Vec<Retention>,
    groups: Option<&[String]>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let wanted = |group: &str| groups.is_none_or(|gs| gs.iter().any(|g| g == group));
    let mut tasks = JoinSet::new();
    let mut kept = Vec::new();
    for (domain, handlers, jobs) in workers {
        if wanted(domain.group) {
            for job in jobs {
                tasks.spawn(job(shutdown.clone()));
            }
        }
        for (queue, handler) in handlers.into_iter().filter(|(q, _)| wanted(q.group)) {
            kept.push(queue);
            let (deps, token) = (platform.consumer_deps(), shutdown.clone());
            tasks.spawn(async move { consumer::run::serve(deps, queue, handler, token).await });
        }
    }
    // The DLQ keeper of the queues this process consumes.
    if !kept.is_empty() {
        tasks.spawn(dead_letters::keeper::run(
            platform.db.clone(),
            platform.broker.clone(),
            kept,
            Duration::from_millis(platform.settings.dead_letters.keeper_interval_ms),
            shutdown.clone(),
        ));
    }
    if platform.tally.take_reporter() {
        tasks.spawn(crate::ops::reporter::run(
            platform.broker.clone(),
            platform.tally.clone(),
            Duration::from_millis(platform.settings.ops.sample_interval_ms),
            shutdown.clone(),
        ));
    }
    let relay = platform.relay.clone();
    let token = shutdown.clone();
    tasks.spawn(async move {
        relay.run(token).await;
        Ok(())
    });
    tasks.spawn(crate::housekeeping::run(
        platform.db.clone(),
        rules,
        shutdown.clone(),
    ));
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

/// The API server, bound and ready to run.
pub struct Application {
    platform: Platform,
    domains: Vec<&'static Domain>,
    /// What the installed domains serve over HTTP.
    served: Vec<Served>,
    /// Their consumers and jobs, for whoever runs them (see [`Application::workers`]).
    workers: InstalledWorkers,
    hub: live::Hub,
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
}

/// The installed domains' consumers and jobs, run once by whoever takes them: the API
/// process itself on the embedded broker (its queues live in it), or a caller that
/// consumes beside it (a test playing `conveyor consume` against RabbitMQ with the same
/// installed services, e.g. the same in-memory search index).
#[derive(Clone)]
pub struct InstalledWorkers {
    platform: Platform,
    rules: Arc<[Retention]>,
    slot: Arc<std::sync::Mutex<Option<Vec<Workers>>>>,
}

impl InstalledWorkers {
    /// Runs the consumers and jobs of `groups` (`None`: every group) until `shutdown`;
    /// the relay and housekeeping run beside them. Runs the installation's consumers at
    /// most once: a second call runs only the relay and housekeeping.
    pub async fn run(
        &self,
        groups: Option<&[String]>,
        shutdown: CancellationToken,
    ) -> anyhow::Result<()> {
        let workers = self
            .slot
            .lock()
            .map_err(|_| anyhow::anyhow!("installed workers lock poisoned"))?
            .take()
            .unwrap_or_default();
        serve_workers(
            &self.platform,
            workers,
            self.rules.to_vec(),
            groups,
            shutdown,
        )
        .await
    }
}

impl Application {
    /// Connects the platform with every domain of this build and binds
    /// `server.host:server.port` (port 0 picks one).
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        Self::build_with(settings, domains::ALL).await
    }

    /// The same with the given domains (tests register one of their own).
    pub async fn build_with(
        settings: Settings,
        domains: &[&'static Domain],
    ) -> anyhow::Result<Self> {
        settings.check_sections(&sections(domains))?;
        let bind = format!("{}:{}", settings.server.host, settings.server.port);
        let topology = topology(&settings, domains);
        let platform = Platform::connect(settings, topology).await?;
        let listener = tokio::net::TcpListener::bind(&bind)
            .await
            .with_context(|| format!("binding {bind} (server.host, server.port)"))?;
        let addr = listener.local_addr()?;
        let bus = crate::bus::Bus::start(platform.broker.as_ref())
            .await
            .context("listening to the bus")?;
        let hub = live::Hub::start(&bus);
        let mut served = Vec::new();
        let mut workers = Vec::new();
        for (domain, parts) in install(&platform, domains).await? {
            served.push((domain, parts.routes, parts.streams, parts.probes));
            workers.push((domain, parts.handlers, parts.jobs));
        }
        let workers = InstalledWorkers {
            platform: platform.clone(),
            rules: retention(&platform.settings, domains).into(),
            slot: Arc::new(std::sync::Mutex::new(Some(workers))),
        };
        Ok(Application {
            platform,
            domains: domains.to_vec(),
            served,
            workers,
            hub,
            listener,
            addr,
        })
    }

    /// The installed consumers and jobs (see [`InstalledWorkers`]).
    pub fn workers(&self) -> InstalledWorkers {
        self.workers.clone()
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
            domains,
            served,
            workers,
            hub,
            listener,
            addr,
        } = self;
        let router = compose(&platform, &domains, served, hub, shutdown.clone()).await?;
        // The embedded broker lives in this process, so its consumers must too; with
        // RabbitMQ consumers are separate processes (`conveyor consume`), and the API
        // process only relays its outbox.
        let in_process = platform.settings.broker.kind == BrokerKind::Embedded;
        let workers = {
            let token = shutdown.clone();
            tokio::spawn(async move {
                if in_process {
                    workers.run(None, token).await
                } else {
                    serve_workers(
                        &workers.platform,
                        Vec::new(),
                        workers.rules.to_vec(),
                        Some(&[]),
                        token,
                    )
                    .await
                }
            })
        };
        tracing::info!(%addr, broker = ?platform.settings.broker.kind, "conveyor API listening");
        let grace = Duration::from_millis(platform.settings.server.shutdown_grace_ms);
        api::server::serve(
            listener,
            router,
            &platform.settings.server,
            shutdown.clone(),
            grace,
        )
        .await;
        shutdown.cancel();
        let worked = workers.await.context("workers task")?;
        platform.broker.close().await;
        tracing::info!("conveyor API stopped");
        worked
    }
}

/// Every per-tenant limit of this build: the platform's (live streams) and the domains'.
pub fn limits(domains: &[&'static Domain]) -> Vec<crate::limits::Limit> {
    live::LIMITS
        .iter()
        .chain(domains.iter().flat_map(|d| d.limits.iter()))
        .copied()
        .collect()
}

/// What one domain serves in the API process: its routes, live streams and probes.
type Served = (
    &'static Domain,
    Option<Routes>,
    Vec<Arc<dyn live::Source>>,
    Vec<Probe>,
);

/// The whole HTTP API: every module's routes, the merged OpenAPI document, the layers.
async fn compose(
    platform: &Platform,
    domains: &[&'static Domain],
    served: Vec<Served>,
    hub: live::Hub,
    shutdown: CancellationToken,
) -> anyhow::Result<Router> {
    let core = Core {
        server: Arc::new(platform.settings.server.clone()),
        auth: platform.settings.auth.clone(),
        db: platform.db.clone(),
        broker: platform.broker.clone(),
        dedupe: platform.dedupe.clone(),
        relay: platform.relay.clone(),
        auth_cache: Arc::new(api::auth::AuthCache::new(
            platform.settings.auth.failed_per_minute,
        )),
        limits: crate::limits::Limits::connect(
            &platform.settings.dedupe,
            &platform.settings.limits,
            platform.db.clone(),
            limits(domains),
        )
        .await
        .context("per-tenant limits")?,
        shutdown,
    };
    // A revoked key's cached identity goes at once, on every instance.
    {
        let notices = hub.bus().subscribe(&crate::users::notices::KEY_NOTICES);
        let (mut controls, cache) = (notices, core.auth_cache.clone());
        tokio::spawn(async move {
            loop {
                match controls.recv().await {
                    Ok(notice) => cache.forget(notice.key_hash()),
                    // Missed notices: forget everything rather than trust a revoked key.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => cache.clear(),
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }
    // The dead letters' gauge, then every domain's.
    let domain_gauges: Arc<[Gauge]> = std::iter::once(dead_letters::GAUGE)
        .chain(domains.iter().flat_map(|d| d.gauges.iter().copied()))
        .collect();
    gauges::register(&domain_gauges);
    let mut sources = Vec::new();
    let mut probes = Vec::new();
    let mut domain_routes = Vec::new();
    for (domain, routes, streams, domain_probes) in served {
        sources.extend(streams);
        probes.extend(domain_probes);
        domain_routes.extend(routes.map(|r| (domain, r)));
    }
    let sources = live::Sources::new(sources);
    let board = ops::Board::start(
        ops::board::Sources {
            db: platform.db.clone(),
            broker: platform.broker.clone(),
            panels: domains
                .iter()
                .flat_map(|d| d.panels.iter().copied())
                .collect(),
            alerts: ops::alerts::Alerts::new(
                platform.db.clone(),
                platform.dedupe.clone(),
                &platform.settings.ops,
            ),
        },
        &platform.settings.ops,
        hub.bus().subscribe(&crate::telemetry::report::REPORTS),
        core.shutdown.clone(),
    );
    let mut doc = api::openapi::ApiDoc::openapi();
    let mut router = Router::new()
        .merge(api::health::routes(api::health::Health {
            core: core.clone(),
            gauges: domain_gauges,
            probes: probes.into(),
        }))
        .merge(account::routes(core.clone()))
        .merge(live::routes(live::Live {
            core: core.clone(),
            settings: Arc::new(platform.settings.live.clone()),
            hub,
            sources,
        }))
        .merge(dead_letters::routes::routes(
            dead_letters::routes::DeadLetters::new(core.clone(), &platform.settings.dead_letters),
        ))
        .merge(ops::routes::routes(ops::routes::Ops {
            core: core.clone(),
            board,
        }));
    for part in [
        api::health::Doc::openapi(),
        account::Doc::openapi(),
        live::Doc::openapi(),
        dead_letters::routes::Doc::openapi(),
        ops::routes::Doc::openapi(),
    ] {
        doc.merge(part);
    }
    for (domain, routes) in domain_routes {
        let routes = routes(core.clone())
            .await
            .with_context(|| format!("building the {} routes", domain.name))?;
        router = router.merge(routes);
    }
    for domain in domains {
        doc.merge((domain.openapi)());
    }
    let router = router.merge(api::openapi::routes(doc));
    Ok(api::layered(router, &platform.settings.server))
}
