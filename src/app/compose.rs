//! The whole HTTP API: every module's routes, the merged OpenAPI document, the layers.

use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use tokio_util::sync::CancellationToken;
use utoipa::OpenApi as _;

use super::limits;
use crate::api::health::Probe;
use crate::api::{self, Core};
use crate::domains::{Domain, Routes};
use crate::telemetry::gauges::{self, Gauge};
use crate::{account, dead_letters, live, ops};

pub use crate::platform::Platform;

/// What one domain serves in the API process: its routes, live streams and probes.
pub(super) type Served = (
    &'static Domain,
    Option<Routes>,
    Vec<Arc<dyn live::Source>>,
    Vec<Probe>,
);

/// The whole HTTP API: every module's routes, the merged OpenAPI document, the layers.
pub(super) async fn compose(
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
        storage: platform.storage.clone(),
        auth_cache: Arc::new(api::auth::AuthCache::new(
            platform.settings.auth.failed_per_minute,
        )),
        limits: crate::limits::Limits::connect(
            &platform.settings.dedupe,
            platform.limits.clone(),
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
    // A changed plan holds on the next request, on every instance.
    {
        let mut notices = hub.bus().subscribe(&crate::plans::notices::PLAN_NOTICES);
        let limits = core.limits.clone();
        tokio::spawn(async move {
            loop {
                match notices.recv().await {
                    // A missed notice forgets the same: everything.
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        limits.forget_standings();
                    }
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
    live::refresh::start(
        hub.clone(),
        sources.clone(),
        platform.db.clone(),
        std::time::Duration::from_millis(platform.settings.live.refresh_ms),
        core.shutdown.clone(),
    );
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
        .merge(api::assets::routes())
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
            page: ops::routes::page_with(&platform.settings.telemetry.trace_link),
        }));
    for part in [
        api::health::Doc::openapi(),
        api::assets::Doc::openapi(),
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
    for configure in domains.iter().filter_map(|d| d.configured_openapi) {
        configure(&platform.settings, &mut doc);
    }
    api::openapi::with_parse_errors(&mut doc);
    account::documented(&core.limits, &mut doc);
    let router = router.merge(api::openapi::routes(doc));
    let streaming = domains
        .iter()
        .flat_map(|d| d.streaming.iter().copied())
        .collect();
    Ok(api::layered(router, &platform.settings.server, streaming))
}
