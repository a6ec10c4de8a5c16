//! HTTP: uploads (streamed multipart, or presigned straight to the bucket and then
//! completed), their status and deletion, and the local store's signed downloads. Every
//! upload is its owner's: another tenant's id answers 404 everywhere.

mod complete;
mod files;
mod presign;
mod upload;
mod uploads;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRef};
use axum::routing::{get, post};

use crate::api::Core;
use crate::error::ApiError;
use crate::storage::StorageError;

/// The media routes' state.
#[derive(Clone, FromRef)]
pub struct Media {
    pub core: Core,
}

pub fn routes(state: Media) -> Router {
    Router::new()
        // Uploads stream past the server's body limit: the write enforces the purpose's.
        .route(
            "/v1/uploads",
            post(upload::create)
                .layer(DefaultBodyLimit::disable())
                .get(uploads::list),
        )
        .route("/v1/uploads/presign", post(presign::create))
        .route(
            "/v1/uploads/{id}",
            get(uploads::read).delete(uploads::remove),
        )
        .route("/v1/uploads/{id}/complete", post(complete::complete))
        .route("/v1/files/{*key}", get(files::download))
        .with_state(state)
}

/// A store failure as an answer: the details go to the log.
pub(crate) fn store_error(e: StorageError) -> ApiError {
    ApiError::Internal(anyhow::Error::new(e).context("media store"))
}

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(upload::create, uploads::list, presign::create, uploads::read, uploads::remove, complete::complete, files::download),
    tags((name = "uploads", description = "Media uploads: streamed or presigned, sniffed, checksummed, owned"),
         (name = "files", description = "Signed downloads of stored files"))
)]
pub struct Doc;
