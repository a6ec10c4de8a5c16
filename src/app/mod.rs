//! The composition root: it reads two lists, the platform's own features ([`FEATURES`])
//! and the domains (`crate::domains::ALL`), through one contract
//! ([`crate::contract::Feature`]; a domain is a feature with queues, settings, a command
//! and an install step). It builds the topology from the domains, connects the
//! [`Platform`], runs consumers and jobs ([`run_workers`]), and composes the HTTP API
//! ([`Application`]) in one loop over every entry: each one's routes (built from what
//! was gathered from all of them: the core, every stream kind, probe, gauge and panel),
//! one OpenAPI document merged from theirs.
//!
//! Files: this one (the lists read: topology, groups, sections, limits, retention,
//! installation), [`workers`] (consumers, jobs, relay, housekeeping), [`application`]
//! (the server), [`serving`] (what is gathered for the routes), [`compose`] (the router
//! and the OpenAPI document).

mod application;
mod compose;
mod serving;
mod workers;

use anyhow::Context as _;

use crate::broker::Topology;
use crate::contract::Feature;
use crate::domains::{self, Domain, Installed};
use crate::features;
use crate::housekeeping::Retention;
use crate::settings::Section;
use crate::settings::Settings;

pub use crate::platform::Platform;
pub use application::Application;
pub use workers::{InstalledWorkers, run_workers};

/// The platform's own features, in the order their routes, documents, limits and tables
/// are composed (before the domains'). Adding one is one line here.
pub const FEATURES: &[&Feature] = &[
    &features::NOTICES,
    &features::HEALTH,
    &features::ASSETS,
    &features::ACCOUNT,
    &features::LIVE,
    &features::DEAD_LETTERS,
    &features::OPS,
    &features::IDEMPOTENCY,
    &features::DELIVERY,
];

/// Every entry of this build: the platform's features, then `domains` as the features
/// they also are.
pub fn entries(domains: &[&'static Domain]) -> Vec<Feature> {
    let domains = domains.iter().map(|d| d.feature);
    FEATURES.iter().map(|f| **f).chain(domains).collect()
}

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
        let mut installed = (domain.install)(platform)
            .await
            .with_context(|| format!("installing the {} domain", domain.name))?;
        // Its event types and listeners join the process's event seam.
        let listeners = std::mem::take(&mut installed.listeners);
        platform
            .events
            .register(domain.name, domain.events, listeners)
            .with_context(|| format!("registering the {} domain's events", domain.name))?;
        out.push((*domain, installed));
    }
    Ok(out)
}

/// The housekeeping rules of this build: every entry's tables.
pub fn retention(settings: &Settings, domains: &[&'static Domain]) -> Vec<Retention> {
    let entries = entries(domains);
    entries.iter().flat_map(|e| e.rules(settings)).collect()
}

/// Every per-tenant limit of this build: every entry's.
pub fn limits(domains: &[&'static Domain]) -> Vec<crate::limits::Limit> {
    let entries = entries(domains);
    entries
        .iter()
        .flat_map(|e| e.limits.iter().copied())
        .collect()
}
