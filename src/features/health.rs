//! The HTTP kit's own routes: liveness, readiness and metrics (with every entry's
//! gauges and probes), and the client bundle the pages load.

use axum::Router;
use utoipa::OpenApi as _;

use crate::api::{assets, health};
use crate::contract::{Feature, Serving};
use crate::platform::Platform;

pub const HEALTH: Feature = Feature::new("health")
    .serve(serve)
    .openapi(health::Doc::openapi);

pub const ASSETS: Feature = Feature::new("assets")
    .serve(|_, _| Ok(assets::routes()))
    .openapi(assets::Doc::openapi);

fn serve(platform: &Platform, serving: &Serving) -> anyhow::Result<Router> {
    crate::telemetry::gauges::register(&serving.gauges);
    Ok(health::routes(health::Health {
        core: serving.core.clone(),
        dedupe: platform.dedupe.clone(),
        gauges: serving.gauges.clone(),
        probes: serving.probes.clone(),
    }))
}
