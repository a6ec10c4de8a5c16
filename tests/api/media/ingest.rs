//! A provider's output URL is copied into the store, streamed, sniffed and checksummed:
//! the copy is what users get. A provider's 5xx is worth a retry, its 404 or a file of
//! the wrong kind is refused, and nothing is stored for either.

use axum::http::StatusCode;
use conveyor::storage::ingest::IngestError;
use conveyor::storage::sniff::{Purpose, check};
use conveyor::storage::{Key, StorageError};
use sha2::{Digest as _, Sha256};

use super::*;
use crate::on_every_store;

on_every_store!(a_providers_output_is_copied_into_the_store);

async fn a_providers_output_is_copied_into_the_store(backend: Backend) {
    let Some((env, app)) = media_app(backend, "media_ingest").await else {
        return;
    };
    let png = file_of(PNG, 300_000);
    let served = png.clone();
    let provider = axum::Router::new()
        .route(
            "/out.png",
            axum::routing::get(move || async move { served }),
        )
        .route(
            "/busy",
            axum::routing::get(|| async { StatusCode::SERVICE_UNAVAILABLE }),
        )
        .route(
            "/gone",
            axum::routing::get(|| async { StatusCode::NOT_FOUND }),
        )
        .route(
            "/page",
            axum::routing::get(|| async { "<html>not an image</html>" }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, provider).await });
    let (storage, client) = (&app.platform.storage, reqwest::Client::new());
    let key_for = |id: &'static str| {
        move |k: conveyor::storage::sniff::Kind| -> Result<Key, StorageError> {
            Ok(Key::new("tenant1", "generated", id, k.extension)?)
        }
    };
    let accept = |head: &[u8]| check(Purpose::Image, head);

    let written = storage
        .ingest(
            &client,
            &format!("{base}/out.png"),
            1 << 20,
            accept,
            key_for("copy"),
        )
        .await
        .unwrap();
    assert_eq!(written.size, png.len() as u64);
    assert_eq!(written.sha256, hex::encode(Sha256::digest(&png)));
    assert_eq!(written.kind.content_type, "image/png");
    let mut read = storage.read(&written.key, None).await.unwrap();
    let mut copy = Vec::new();
    while let Some(c) = read.bytes.next().await {
        copy.extend_from_slice(&c.unwrap());
    }
    assert_eq!(copy, png, "the store holds the provider's bytes");

    let busy = storage
        .ingest(
            &client,
            &format!("{base}/busy"),
            1 << 20,
            accept,
            key_for("busy"),
        )
        .await;
    assert!(matches!(busy, Err(IngestError::Fetch(_))), "{busy:?}");
    let gone = storage
        .ingest(
            &client,
            &format!("{base}/gone"),
            1 << 20,
            accept,
            key_for("gone"),
        )
        .await;
    assert!(matches!(gone, Err(IngestError::Refused(_))), "{gone:?}");
    let page = storage
        .ingest(
            &client,
            &format!("{base}/page"),
            1 << 20,
            accept,
            key_for("page"),
        )
        .await;
    assert!(matches!(page, Err(IngestError::Refused(_))), "{page:?}");
    let big = storage
        .ingest(
            &client,
            &format!("{base}/out.png"),
            1000,
            accept,
            key_for("big"),
        )
        .await;
    assert!(matches!(big, Err(IngestError::Refused(_))), "{big:?}");
    // Nothing but the one copy was stored.
    let mut listing = storage.list(None);
    let mut paths = Vec::new();
    while let Some(o) = listing.next().await {
        paths.push(o.unwrap().path);
    }
    assert_eq!(paths, vec!["tenant1/generated/copy.png".to_owned()]);
    media_done(env, app).await;
}
