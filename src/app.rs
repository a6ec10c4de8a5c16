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

use crate::api::{self, Core};
use crate::broker::Topology;
use crate::config::{BrokerKind, Section, Settings};
use crate::domains::{self, Domain};
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
    Topology::new(settings, &queues, &delays)
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

/// Runs the consumers and jobs of `domains` in `groups` (`None`: every group; empty:
/// none), the outbox relay and housekeeping until `shutdown`; returns once they stopped.
pub async fn run_workers(
    platform: &Platform,
    domains: &[&Domain],
    groups: Option<&[String]>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let wanted = |group: &str| groups.is_none_or(|gs| gs.iter().any(|g| g == group));
    let mut tasks = JoinSet::new();
    for domain in domains.iter().filter(|d| wanted(d.group)) {
        for job in (domain.jobs)(platform, shutdown.clone()) {
            tasks.spawn(job);
        }
    }
    // Only domains with a queue here build their handlers (building one may connect to
    // a store of its own, e.g. the flash-sale stock in Redis).
    let serving = domains
        .iter()
        .filter(|d| d.queues.iter().any(|q| wanted(q.group)));
    // The DLQ keeper of the queues this process consumes.
    let kept: Vec<_> = domains
        .iter()
        .flat_map(|d| d.queues.iter().copied())
        .filter(|q| wanted(q.group))
        .collect();
    if !kept.is_empty() {
        tasks.spawn(dead_letters::keeper::run(
            platform.db.clone(),
            platform.broker.clone(),
            kept,
            Duration::from_millis(platform.settings.dead_letters.keeper_interval_ms),
            shutdown.clone(),
        ));
    }
    for domain in serving {
        for (queue, handler) in (domain.handlers)(platform)
            .await
            .with_context(|| format!("building the {} handlers", domain.name))?
        {
            if !wanted(queue.group) {
                continue;
            }
            let (deps, token) = (platform.consumer_deps(), shutdown.clone());
            tasks.spawn(async move { consumer::run::serve(deps, queue, handler, token).await });
        }
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
        platform.settings.consumer.fence_retention_days,
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
    hub: live::Hub,
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
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
        let hub = live::Hub::start(platform.broker.clone())
            .await
            .context("listening to live events")?;
        Ok(Application {
            platform,
            domains: domains.to_vec(),
            hub,
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
            domains,
            hub,
            listener,
            addr,
        } = self;
        let router = compose(&platform, &domains, hub, shutdown.clone()).await?;
        // The embedded broker lives in this process, so its consumers must too; with
        // RabbitMQ consumers are separate processes (`conveyor consume`), and the API
        // process only relays its outbox.
        let in_process = platform.settings.broker.kind == BrokerKind::Embedded;
        let workers = {
            let (p, token, domains) = (platform.clone(), shutdown.clone(), domains.clone());
            tokio::spawn(async move {
                let groups: Option<&[String]> = if in_process { None } else { Some(&[]) };
                run_workers(&p, &domains, groups, token).await
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

/// The whole HTTP API: every module's routes, the merged OpenAPI document, the layers.
async fn compose(
    platform: &Platform,
    domains: &[&'static Domain],
    hub: live::Hub,
    shutdown: CancellationToken,
) -> anyhow::Result<Router> {
    let core = Core {
        settings: platform.settings.clone(),
        db: platform.db.clone(),
        broker: platform.broker.clone(),
        dedupe: platform.dedupe.clone(),
        relay: platform.relay.clone(),
        auth_cache: Arc::new(api::auth::AuthCache::new(
            platform.settings.auth.failed_per_minute,
        )),
        limits: crate::limits::Limits::connect(
            &platform.settings,
            platform.db.clone(),
            limits(domains),
        )
        .await
        .context("per-tenant limits")?,
        shutdown,
    };
    // A revoked key's cached identity goes at once, on every instance.
    {
        let (mut controls, cache) = (hub.controls(), core.auth_cache.clone());
        tokio::spawn(async move {
            loop {
                match controls.recv().await {
                    Ok(c) => match c.as_ref() {
                        live::Control::KeyRevoked { key_hash }
                        | live::Control::KeyChanged { key_hash } => cache.forget(key_hash),
                    },
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
    let sources = live::Sources::new(domains.iter().flat_map(|d| (d.streams)(platform)));
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
        hub.reports(),
        core.shutdown.clone(),
    );
    let mut probes = Vec::new();
    for d in domains {
        probes.extend(
            (d.probes)(platform)
                .await
                .with_context(|| format!("the {} readiness probes", d.name))?,
        );
    }
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
            hub,
            sources,
        }))
        .merge(dead_letters::routes::routes(
            dead_letters::routes::DeadLetters::new(core.clone()),
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
    for domain in domains {
        let routes = (domain.routes)(platform, &core)
            .await
            .with_context(|| format!("building the {} routes", domain.name))?;
        router = router.merge(routes);
        doc.merge((domain.openapi)());
    }
    let router = router.merge(api::openapi::routes(doc));
    Ok(api::layered(router, &platform.settings))
}
