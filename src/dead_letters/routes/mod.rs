//! The admin API over dead letters: list, inspect, replay, discard. Admins only
//! (`users create --admin`); any other caller gets 403.
//!
//! - `GET  /v1/admin/dead-letters?queue=&status=&reason=&cursor=&limit=`
//! - `GET  /v1/admin/dead-letters/{id}` (with body, history and audit trail)
//! - `POST /v1/admin/dead-letters/{id}/replay` (429 above `dead_letters.replay_per_second`)
//! - `POST /v1/admin/dead-letters/{id}/discard`
//! - `POST /v1/admin/dead-letters/replay` (by filter: a dry run counts, a run replays a
//!   slice at the replay pace and says how many remain)

mod operate;
mod read;
mod view;

use std::sync::Arc;

use axum::Router;
use axum::extract::FromRef;
use axum::routing::{get, post};

use super::settings::DeadLetterSettings;
use crate::api::Core;

/// The routes' state: the core and the replay pace shared by every admin request.
#[derive(Clone, FromRef)]
pub struct DeadLetters {
    pub core: Core,
    pub replay_limiter: Arc<super::operate::ReplayLimiter>,
}

impl DeadLetters {
    pub fn new(core: Core, settings: &DeadLetterSettings) -> Self {
        let per_second = settings.replay_per_second;
        DeadLetters {
            core,
            replay_limiter: Arc::new(super::operate::replay_limiter(per_second)),
        }
    }
}

pub fn routes(state: DeadLetters) -> Router {
    Router::new()
        .route("/v1/admin/dead-letters", get(read::list))
        .route("/v1/admin/dead-letters/{id}", get(read::show))
        .route("/v1/admin/dead-letters/{id}/replay", post(operate::replay))
        .route(
            "/v1/admin/dead-letters/{id}/discard",
            post(operate::discard),
        )
        .route(
            "/v1/admin/dead-letters/replay",
            post(operate::replay_filter),
        )
        .with_state(state)
}

/// The routes' OpenAPI entries.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(
        read::list,
        read::show,
        operate::replay,
        operate::discard,
        operate::replay_filter
    ),
    components(schemas(super::Status))
)]
pub struct Doc;
