//! Live streams (`crate::live`): every entry's stream kinds behind one WebSocket and SSE
//! surface, the hub that routes this instance's events, the refresh of events between
//! stored ones, tickets and their table, the limits on tickets and open streams.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use utoipa::OpenApi as _;

use crate::contract::{Feature, Serving};
use crate::live;
use crate::platform::Platform;

pub const LIVE: Feature = Feature::new("live")
    .serve(serve)
    .limits(live::LIMITS)
    .retention(&[live::tickets::RETENTION])
    .openapi(live::Doc::openapi);

fn serve(platform: &Platform, serving: &Serving) -> anyhow::Result<Router> {
    let settings = Arc::new(platform.settings.live.clone());
    let hub = live::Hub::start(&serving.bus);
    live::refresh::start(
        hub.clone(),
        serving.sources.clone(),
        platform.db.clone(),
        Duration::from_millis(settings.refresh_ms),
        serving.core.shutdown.clone(),
    );
    Ok(live::routes(live::Live {
        core: serving.core.clone(),
        settings,
        hub,
        sources: serving.sources.clone(),
    }))
}
