//! HTTP: uploads (streamed multipart, or presigned straight to the bucket and then
//! completed), their status and deletion, and the local store's signed downloads. Every
//! upload is its owner's: another tenant's id answers 404 everywhere.

mod complete;
mod files;
mod form;
mod presign;
mod upload;
mod uploads;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRef, State};
use axum::routing::{get, post};

use crate::api::Core;

/// The media routes' state.
#[derive(Clone, FromRef)]
pub struct Media {
    pub core: Core,
}

pub fn routes(state: Media) -> Router {
    let timed = axum::middleware::from_fn_with_state(state.clone(), deadline);
    Router::new()
        // Uploads stream past the server's body limit: the write enforces the purpose's,
        // the form's meter the whole body's (`form`).
        .route(
            "/v1/uploads",
            post(upload::create)
                .layer(DefaultBodyLimit::disable())
                .layer(axum::middleware::map_response(close_after_refusal))
                .merge(get(uploads::list).layer(timed.clone())),
        )
        .route(
            "/v1/uploads/presign",
            post(presign::create).layer(timed.clone()),
        )
        .route(
            "/v1/uploads/{id}",
            get(uploads::read).delete(uploads::remove).layer(timed),
        )
        // No deadline: completing reads the whole object in the bucket (the client sends
        // no body), which may take longer than a request's deadline for a large video.
        .route("/v1/uploads/{id}/complete", post(complete::complete))
        .route("/v1/files/{*key}", get(files::download))
        .with_state(state)
}

/// The whole-request deadline of every other route (`server.request_timeout_ms`, 408):
/// these routes sit under the `/v1/uploads` prefix the server exempts for streamed
/// uploads, and a body they read (a presign request) must not be held open for ever.
async fn deadline(
    State(state): State<Media>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    match tokio::time::timeout(state.core.server.request_timeout(), next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => axum::response::IntoResponse::into_response(crate::error::ApiError::timeout()),
    }
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
