//! The API server: bound, its domains installed, run until shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use tokio_util::sync::CancellationToken;

use super::compose::Served;
use super::compose::compose;
use super::install;
use super::retention;
use super::sections;
use super::topology;
use super::workers::InstalledWorkers;
use super::workers::serve_workers;
use crate::api;
use crate::broker::settings::BrokerKind;
use crate::domains::{self, Domain};
use crate::live;
use crate::settings::Settings;

pub use crate::platform::Platform;

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

    /// The composed router alone, serving nothing and running no workers: for tests that
    /// drive requests through it (`tower::ServiceExt::oneshot`) without a socket.
    pub async fn into_router(self, shutdown: CancellationToken) -> anyhow::Result<Router> {
        compose(
            &self.platform,
            &self.domains,
            self.served,
            self.hub,
            shutdown,
        )
        .await
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
