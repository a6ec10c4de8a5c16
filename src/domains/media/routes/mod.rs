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
                .layer(axum::middleware::map_response(close_after_refusal))
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

/// An upload refused before its body was read to the end leaves bytes on the
/// connection: `Connection: close` makes the server close it after the answer and tells
/// the client not to send another request on it (which would meet a reset).
async fn close_after_refusal(mut resp: axum::response::Response) -> axum::response::Response {
    if !resp.status().is_success() {
        resp.headers_mut().insert(
            axum::http::header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
    }
    resp
}

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(upload::create, uploads::list, presign::create, uploads::read, uploads::remove, complete::complete, files::download),
    tags((name = "uploads", description = "Media uploads: streamed or presigned, sniffed, checksummed, owned"),
         (name = "files", description = "Signed downloads of stored files"))
)]
pub struct Doc;
