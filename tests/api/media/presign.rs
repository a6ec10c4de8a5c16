//! Browser-to-bucket uploads (S3 only): presign, PUT, complete. Completion checks the
//! object exists with the declared size and is the declared type; the local store says
//! to upload through the API instead.

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::*;
use crate::on_every_store;

on_every_store!(a_presigned_upload_completes_only_with_the_declared_bytes);

async fn presign(app: &TestApp, key: &str, body: Value) -> (u16, Value) {
    let r = app
        .client
        .post(app.url("/v1/uploads/presign"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

async fn complete(app: &TestApp, key: &str, id: &str) -> (u16, Value) {
    let r = app
        .client
        .post(app.url(&format!("/v1/uploads/{id}/complete")))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

async fn put(app: &TestApp, url: &str, bytes: Vec<u8>) -> u16 {
    app.client
        .put(url)
        .body(bytes)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn a_presigned_upload_completes_only_with_the_declared_bytes(backend: Backend) {
    let Some((env, app)) = media_app(backend, "media_presign").await else {
        return;
    };
    let (_, key) = app.user("direct", 0).await;
    let bytes = file_of(MP4, 200_000);
    let (status, body) = presign(
        &app,
        &key,
        json!({"purpose": "video", "content_type": "video/mp4", "size": bytes.len()}),
    )
    .await;
    if !backend.is_real() {
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (409, Some("presign_unavailable")),
            "{body}"
        );
        return media_done(env, app).await;
    }
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["upload"]["status"], "PENDING");
    let (id, url) = (
        body["upload"]["id"].as_str().unwrap().to_owned(),
        body["upload_url"].as_str().unwrap().to_owned(),
    );
    // Nothing there yet.
    let (status, early) = complete(&app, &key, &id).await;
    assert_eq!(
        (status, early["error"]["code"].as_str()),
        (409, Some("not_uploaded")),
        "{early}"
    );
    assert_eq!(put(&app, &url, bytes.clone()).await, 200);
    let (status, done_view) = complete(&app, &key, &id).await;
    assert_eq!(status, 200, "{done_view}");
    assert_eq!(done_view["status"], "READY");
    assert_eq!(done_view["sha256"], hex::encode(Sha256::digest(&bytes)));
    let got = fetch(&app, done_view["url"].as_str().unwrap(), &[]).await;
    assert_eq!(got.bytes().await.unwrap().len(), bytes.len());
    // Completing again answers it as it is.
    let (status, again) = complete(&app, &key, &id).await;
    assert_eq!((status, again["status"].as_str()), (200, Some("READY")));

    // More bytes than declared: REJECTED and the object removed.
    let (_, body) = presign(
        &app,
        &key,
        json!({"purpose": "video", "content_type": "video/mp4", "size": 1000}),
    )
    .await;
    let (id, url) = (
        body["upload"]["id"].as_str().unwrap().to_owned(),
        body["upload_url"].as_str().unwrap().to_owned(),
    );
    assert_eq!(put(&app, &url, file_of(MP4, 1010)).await, 200);
    let (status, body) = complete(&app, &key, &id).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("size_mismatch")),
        "{body}"
    );
    let read = app.get_json(&key, &format!("/v1/uploads/{id}")).await;
    assert_eq!(read["status"], "REJECTED");
    // An executable declared as MP4.
    let (_, body) = presign(
        &app,
        &key,
        json!({"purpose": "video", "content_type": "video/mp4", "size": 4000}),
    )
    .await;
    let (id, url) = (
        body["upload"]["id"].as_str().unwrap().to_owned(),
        body["upload_url"].as_str().unwrap().to_owned(),
    );
    assert_eq!(put(&app, &url, file_of(EXE, 4000)).await, 200);
    let (status, body) = complete(&app, &key, &id).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("unsupported_media_type")),
        "{body}"
    );
    // Declared types and sizes are checked up front.
    let (status, body) = presign(
        &app,
        &key,
        json!({"purpose": "video", "content_type": "application/x-msdownload", "size": 10}),
    )
    .await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (422, Some("content_type")),
        "{body}"
    );
    let (status, body) = presign(
        &app,
        &key,
        json!({"purpose": "image", "content_type": "image/png", "size": 1u64 << 40}),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (413, Some("file_too_large")),
        "{body}"
    );
    let me = app.get_json(&key, "/v1/me").await;
    assert_eq!(
        me["storage"]["used_bytes"],
        bytes.len() as u64,
        "only the READY upload is held: {me}"
    );
    media_done(env, app).await;
}
