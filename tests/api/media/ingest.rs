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
    let storage = &app.platform.storage;
    let key_for = |id: &'static str| {
        move |k: conveyor::storage::sniff::Kind| -> Result<Key, StorageError> {
            Ok(Key::new("tenant1", "generated", id, k.extension)?)
        }
    };
    let accept = |head: &[u8]| check(Purpose::Image, head);

    let written = storage
        .ingest(&format!("{base}/out.png"), 1 << 20, accept, key_for("copy"))
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
        .ingest(&format!("{base}/busy"), 1 << 20, accept, key_for("busy"))
        .await;
    assert!(matches!(busy, Err(IngestError::Fetch(_))), "{busy:?}");
    let gone = storage
        .ingest(&format!("{base}/gone"), 1 << 20, accept, key_for("gone"))
        .await;
    assert!(matches!(gone, Err(IngestError::Refused(_))), "{gone:?}");
    let page = storage
        .ingest(&format!("{base}/page"), 1 << 20, accept, key_for("page"))
        .await;
    assert!(matches!(page, Err(IngestError::Refused(_))), "{page:?}");
    let big = storage
        .ingest(&format!("{base}/out.png"), 1000, accept, key_for("big"))
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

on_every_store!(a_providers_url_reaches_public_addresses_only);

/// A provider names the URL, so it may name anything: a redirect to the cloud's metadata
/// service or the private network is refused (final, not retried) and nothing is stored;
/// loopback is allowed only because the test settings list it
/// (`storage.ingest_private_addresses`), and refused with the production default.
async fn a_providers_url_reaches_public_addresses_only(backend: Backend) {
    use axum::http::header::LOCATION;
    let Some((env, app)) = media_app(backend, "media_ingest_guard").await else {
        return;
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let png = file_of(PNG, 5_000);
    let served = png.clone();
    let to = |url: String| move || async move { (StatusCode::FOUND, [(LOCATION, url)]) };
    let provider = axum::Router::new()
        .route(
            "/out.png",
            axum::routing::get(move || async move { served }),
        )
        .route(
            "/to-self",
            axum::routing::get(to(format!("{base}/out.png"))),
        )
        .route(
            "/to-metadata",
            axum::routing::get(to("http://169.254.169.254/latest/meta-data/".into())),
        )
        .route(
            "/to-private",
            axum::routing::get(to("http://10.0.0.1/admin".into())),
        )
        .route(
            "/to-other-loopback",
            axum::routing::get(to(format!("http://127.0.0.2:{port}/out.png"))),
        )
        .route(
            "/to-file",
            axum::routing::get(to("file:///etc/passwd".into())),
        )
        .route("/loop", axum::routing::get(to(format!("{base}/loop"))));
    tokio::spawn(async move { axum::serve(listener, provider).await });
    let storage = &app.platform.storage;
    let key_for = |id: &'static str| {
        move |k: conveyor::storage::sniff::Kind| -> Result<Key, StorageError> {
            Ok(Key::new("tenant1", "generated", id, k.extension)?)
        }
    };
    let accept = |head: &[u8]| check(Purpose::Image, head);

    // A redirect the guard allows is followed.
    let written = storage
        .ingest(&format!("{base}/to-self"), 1 << 20, accept, key_for("ok"))
        .await
        .unwrap();
    assert_eq!(written.sha256, hex::encode(Sha256::digest(&png)));
    for (path, why) in [
        ("/to-metadata", "169.254.169.254 is not a public address"),
        ("/to-private", "10.0.0.1 is not a public address"),
        ("/to-other-loopback", "127.0.0.2 is not a public address"),
        // reqwest never follows a redirect to a scheme it does not speak: the 302 is
        // the answer, refused like any other that is not a file.
        ("/to-file", "answered 302"),
        ("/loop", "redirects"),
    ] {
        let got = storage
            .ingest(&format!("{base}{path}"), 1 << 20, accept, key_for("bad"))
            .await;
        match got {
            Err(IngestError::Refused(reason)) => {
                assert!(reason.contains(why), "{path}: {reason}")
            }
            other => panic!("{path}: refused expected, got {other:?}"),
        }
    }

    // The production default: public addresses only, literal or named.
    let mut strict = env.settings.storage.clone();
    strict.ingest_private_addresses.clear();
    let strict = conveyor::storage::Storage::open(&strict).unwrap();
    for (url, why) in [
        (
            format!("{base}/out.png"),
            "127.0.0.1 is not a public address",
        ),
        (
            format!("http://localhost:{port}/out.png"),
            "resolves to no public address",
        ),
    ] {
        match strict
            .ingest(&url, 1 << 20, accept, key_for("strict"))
            .await
        {
            Err(IngestError::Refused(reason)) => assert!(reason.contains(why), "{url}: {reason}"),
            other => panic!("{url}: refused expected, got {other:?}"),
        }
    }

    let mut listing = storage.list(None);
    let mut paths = Vec::new();
    while let Some(o) = listing.next().await {
        paths.push(o.unwrap().path);
    }
    assert_eq!(
        paths,
        vec!["tenant1/generated/ok.png".to_owned()],
        "nothing refused was stored"
    );
    media_done(env, app).await;
}
