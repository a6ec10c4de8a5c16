//! What the API process gathers from every entry before it builds their routes: the
//! HTTP kit's [`Core`] (with every declared limit) and [`Serving`] (every stream kind,
//! probe, gauge and panel), so an entry whose routes need the whole build (live streams,
//! health, the ops board) gets it as data and no entry is wired by hand.

use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::api::Core;
use crate::api::health::Probe;
use crate::bus::Bus;
use crate::contract::{Feature, Serving};
use crate::domains::Routes;
use crate::live::{Source, Sources};
use crate::platform::Platform;

/// Builds one entry's routes from the platform and what was gathered.
pub(super) type Build =
    Box<dyn FnOnce(&Platform, Serving) -> BoxFuture<'static, anyhow::Result<Router>> + Send>;

/// What one entry serves in the API process: its routes, live streams and probes.
pub(super) struct Served {
    pub entry: Feature,
    pub routes: Option<Build>,
    pub streams: Vec<Arc<dyn Source>>,
    pub probes: Vec<Probe>,
}

impl Served {
    /// A platform feature: its routes from its `serve`.
    pub fn feature(entry: Feature) -> Self {
        let routes = entry.serve.map(|serve| -> Build {
            Box::new(move |platform, serving| {
                futures::future::ready(serve(platform, &serving)).boxed()
            })
        });
        Served {
            entry,
            routes,
            streams: Vec::new(),
            probes: Vec::new(),
        }
    }

    /// A domain, installed: its routes need only the core.
    pub fn domain(
        entry: Feature,
        routes: Option<Routes>,
        streams: Vec<Arc<dyn Source>>,
        probes: Vec<Probe>,
    ) -> Self {
        let routes = routes.map(|routes| -> Build { Box::new(move |_, s| routes(s.core)) });
        Served {
            entry,
            routes,
            streams,
            probes,
        }
    }
}

/// Gathers [`Serving`] from every entry (taking their streams and probes).
pub(super) async fn gather(
    platform: &Platform,
    served: &mut [Served],
    bus: Bus,
    shutdown: CancellationToken,
) -> anyhow::Result<Serving> {
    let settings = &platform.settings;
    let limits = served.iter().flat_map(|s| s.entry.limits.iter().copied());
    let core = Core {
        server: Arc::new(settings.server.clone()),
        db: platform.db.clone(),
        broker: platform.broker.clone(),
        relay: platform.relay.clone(),
        storage: platform.storage.clone(),
        auth_cache: Arc::new(crate::api::auth::AuthCache::new(
            settings.auth.failed_per_minute,
        )),
        limits: crate::limits::Limits::connect(
            &settings.dedupe,
            platform.limits.clone(),
            limits.collect(),
        )
        .await
        .context("per-tenant limits")?,
        shutdown,
    };
    let entries = || served.iter().map(|s| &s.entry);
    let gauges = entries().flat_map(|e| e.gauges.iter().copied()).collect();
    let panels = entries().flat_map(|e| e.panels.iter().copied()).collect();
    let streams = served
        .iter_mut()
        .flat_map(|s| std::mem::take(&mut s.streams));
    let sources = Sources::new(streams.collect::<Vec<_>>());
    let probes = served
        .iter_mut()
        .flat_map(|s| std::mem::take(&mut s.probes));
    Ok(Serving {
        core,
        bus,
        sources,
        probes: probes.collect(),
        gauges,
        panels,
    })
}
