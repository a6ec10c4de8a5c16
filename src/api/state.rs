//! [`Core`]: what every route module's state carries (settings, backends, the identity
//! cache, the shutdown token). Route modules own a small state of their own that holds a
//! `Core` and derives `FromRef`, so the extractors here ([`super::AuthUser`], …) work in
//! every one of them without knowing the others. What only one route module reads (the
//! dedupe store `/readyz` pings, `[auth]`'s key rotation) is in that module's state: the
//! extractors copy a `Core` per request.

use std::sync::Arc;

use sea_orm::DatabaseConnection;
use tokio_util::sync::CancellationToken;

use super::auth::AuthCache;
use super::settings::ServerSettings;
use crate::broker::Broker;
use crate::limits::Limits;
use crate::outbox::Relay;

#[derive(Clone)]
pub struct Core {
    /// `[server]`: the HTTP kit's own settings.
    pub server: Arc<ServerSettings>,
    pub db: DatabaseConnection,
    pub broker: Arc<dyn Broker>,
    pub relay: Relay,
    /// Media files: uploads, generated outputs, signed URLs.
    pub storage: Arc<crate::storage::Storage>,
    pub auth_cache: Arc<AuthCache>,
    /// Per-tenant rates, in-flight cap, open streams.
    pub limits: Limits,
    /// Cancelled at shutdown: long-lived streams close with a proper close frame.
    pub shutdown: CancellationToken,
}
