//! The composition root: the one place that names every domain and every route module.
//! It builds the topology from the domain registry, connects the [`Platform`], runs
//! consumers and jobs ([`run_workers`]), and composes the HTTP API ([`Application`]):
//! each module's router (with its own state), one OpenAPI document merged from theirs,
//! the live-stream sources and the gauges the domains bring.
//!
//! Files: this one (the registry read: topology, groups, sections, limits, retention,
//! installation), [`workers`] (consumers, jobs, relay, housekeeping), [`application`]
//! (the server), [`compose`] (the router and the OpenAPI document).

mod application;
mod compose;
mod workers;

use anyhow::Context as _;

use crate::broker::Topology;
use crate::domains::{self, Domain, Installed};
use crate::housekeeping::Retention;
use crate::settings::Section;
use crate::settings::Settings;
use crate::{consumer, live};

pub use crate::platform::Platform;
pub use application::Application;
pub use workers::{InstalledWorkers, run_workers};

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
        crate::idempotency::RETENTION,
        crate::outbox::RETENTION,
        live::tickets::RETENTION,
    ]
    .into_iter()
    .chain(consumer::retention(settings.consumer.fence_retention_days))
    .chain(domains.iter().flat_map(|d| d.retention.iter().copied()))
    .collect()
}

/// Every per-tenant limit of this build: the platform's (live streams) and the domains'.
pub fn limits(domains: &[&'static Domain]) -> Vec<crate::limits::Limit> {
    live::LIMITS
        .iter()
        .chain(domains.iter().flat_map(|d| d.limits.iter()))
        .copied()
        .collect()
}
