//! HTTP: an owner's materials (list, read, edit title and tags, delete) and search over
//! them. Every read and write is scoped to the caller; the search's owner filter is set
//! here from the API key, never taken from the request.

mod materials;
mod search;

use std::sync::Arc;

use axum::Router;
use axum::extract::FromRef;
use axum::routing::get;

use super::backend::Search;
use crate::api::Core;
use crate::search::semantic::Embedder;

#[derive(Clone, FromRef)]
pub struct Materials {
    pub core: Core,
    pub search: Arc<Search>,
    /// Embeds the query of a search by meaning (`None`: its provider is not configured).
    pub embeddings: Option<Arc<dyn Embedder>>,
}

pub fn routes(state: Materials) -> Router {
    Router::new()
        .route("/v1/materials", get(materials::list))
        .route("/v1/materials/search", get(search::find))
        .route(
            "/v1/materials/{id}",
            get(materials::read)
                .patch(materials::edit)
                .delete(materials::remove),
        )
        .with_state(state)
}

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(materials::list, search::find, materials::read, materials::edit, materials::remove),
    tags((name = "materials", description = "What AI tasks produced: list, edit, delete, search"))
)]
pub struct Doc;
