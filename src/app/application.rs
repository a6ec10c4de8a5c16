//! The API server: bound, its domains installed, run until shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use tokio_util::sync::CancellationToken;

use super::compose::compose;
use super::serving::Served;
use super::workers::InstalledWorkers;
use super::workers::serve_workers;
use super::{FEATURES, install, retention, sections, topology};
use crate::api;
use crate::broker::settings::BrokerKind;
use crate::bus::Bus;
use crate::domains::{self, Domain};
use crate::settings::Settings;

pub use crate::platform::Platform;

/// The API server, bound and ready to run.
pub struct Application {
    platform: Platform,
    /// What the platform's features and the installed domains serve over HTTP.
    served: Vec<Served>,
    /// The domains' consumers and jobs, for whoever runs them (see
    /// [`Application::workers`]).
    workers: InstalledWorkers,
    /// Listening since the build, so nothing published after it is missed.
    bus: Bus,
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
        let declared = super::limits(domains);
        crate::plans::settings::check(&settings.plans, &|l| {
            crate::limits::declared::check(l, &declared)
        })?;
        let bind = format!("{}:{}", settings.server.host, settings.server.port);
        let topology = topology(&settings, domains);
        let platform = Platform::connect(settings, topology).await?;
        let listener = tokio::net::TcpListener::bind(&bind)
            .await
            .with_context(|| format!("binding {bind} (server.host, server.port)"))?;
        let addr = listener.local_addr()?;
        let bus = Bus::start(platform.broker.as_ref())
            .await
            .context("listening to the bus")?;
        let mut served: Vec<Served> = FEATURES.iter().map(|f| Served::feature(**f)).collect();
        let mut workers = Vec::new();
        for (domain, parts) in install(&platform, domains).await? {
            let (routes, streams, probes) = (parts.routes, parts.streams, parts.probes);
            served.push(Served::domain(domain.feature, routes, streams, probes));
            workers.push((domain, parts.handlers, parts.jobs));
        }
        let workers = InstalledWorkers {
            platform: platform.clone(),
            rules: retention(&platform.settings, domains).into(),
            slot: Arc::new(std::sync::Mutex::new(Some(workers))),
        };
        Ok(Application {
            platform,
            served,
            workers,
            bus,
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

    /// The composed router alone, serving nothing and running no workers: for tests that
    /// drive requests through it (`tower::ServiceExt::oneshot`) without a socket.
    pub async fn into_router(self, shutdown: CancellationToken) -> anyhow::Result<Router> {
        compose(&self.platform, self.served, self.bus, shutdown).await
    }

    /// Serves until `shutdown`: in-flight requests get `server.shutdown_grace_ms`, then
    /// consumers drain, the relay flushes and connections close.
    pub async fn run_until(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let Application {
            platform,
            served,
            workers,
            bus,
            listener,
            addr,
        } = self;
        let router = compose(&platform, served, bus, shutdown.clone()).await?;
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
