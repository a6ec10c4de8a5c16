//! Notices that keep the HTTP kit's caches true on every instance: a revoked key's
//! cached identity goes at once, and a changed plan holds on the next request.

use axum::Router;
use tokio::sync::broadcast::error::RecvError;

use crate::contract::{Feature, Serving};
use crate::platform::Platform;

pub const NOTICES: Feature = Feature::new("notices").serve(serve);

/// Listens for the process's life (until the bus closes); routes none.
fn serve(_: &Platform, serving: &Serving) -> anyhow::Result<Router> {
    let mut keys = serving.bus.subscribe(&crate::users::notices::KEY_NOTICES);
    let cache = serving.core.auth_cache.clone();
    tokio::spawn(async move {
        loop {
            match keys.recv().await {
                Ok(notice) => cache.forget(notice.key_hash()),
                // Missed notices: forget everything rather than trust a revoked key.
                Err(RecvError::Lagged(_)) => cache.clear(),
                Err(RecvError::Closed) => return,
            }
        }
    });
    let mut plans = serving.bus.subscribe(&crate::plans::notices::PLAN_NOTICES);
    let limits = serving.core.limits.clone();
    tokio::spawn(async move {
        loop {
            match plans.recv().await {
                // A missed notice forgets the same: everything.
                Ok(_) | Err(RecvError::Lagged(_)) => limits.forget_standings(),
                Err(RecvError::Closed) => return,
            }
        }
    });
    Ok(Router::new())
}
