//! The whole HTTP API, in one loop over every entry (the platform's features, then the
//! domains): each builds its routes from what was gathered from all of them and brings
//! its OpenAPI entries; the document is finished with what the configuration decides.

use anyhow::Context as _;
use axum::Router;
use tokio_util::sync::CancellationToken;
use utoipa::OpenApi as _;

use super::serving::{Served, gather};
use crate::api;
use crate::bus::Bus;
use crate::contract::DocContext;
use crate::platform::Platform;

/// The router of every entry in `served`, with the document and the layers.
pub(super) async fn compose(
    platform: &Platform,
    mut served: Vec<Served>,
    bus: Bus,
    shutdown: CancellationToken,
) -> anyhow::Result<Router> {
    let serving = gather(platform, &mut served, bus, shutdown).await?;
    let entries: Vec<_> = served.iter().map(|s| s.entry).collect();
    let mut doc = api::openapi::ApiDoc::openapi();
    let mut router = Router::new();
    for Served { entry, routes, .. } in served {
        if let Some(routes) = routes {
            let routes = routes(platform, serving.clone())
                .await
                .with_context(|| format!("building the {} routes", entry.name))?;
            router = router.merge(routes);
        }
        doc.merge((entry.openapi)());
    }
    let build = DocContext {
        settings: &platform.settings,
        limits: serving.core.limits.declared(),
    };
    for configure in entries.iter().filter_map(|e| e.configured_openapi) {
        configure(&build, &mut doc);
    }
    api::openapi::with_parse_errors(&mut doc);
    let streaming = entries.iter().flat_map(|e| e.streaming.iter().copied());
    let router = router.merge(api::openapi::routes(doc));
    Ok(api::layered(
        router,
        &platform.settings.server,
        streaming.collect(),
    ))
}
