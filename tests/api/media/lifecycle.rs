//! Quota and the collector: the upload that would cross the quota is refused before
//! its bytes are stored; a deleted upload disappears at once and its bytes and quota go
//! after the grace; abandoned PENDING uploads and objects no row knows are collected.

use bytes::Bytes;
use chrono::{Duration, Utc};
use conveyor::storage::sniff::sniff;
use conveyor::storage::{Key, StorageError, records, sweep};

use super::*;
use crate::on_every_store;

on_every_store!(
    the_quota_refuses_the_upload_that_would_cross_it,
    deleted_uploads_lose_their_bytes_after_the_grace_and_strays_are_collected,
);

const MIB: usize = 1024 * 1024;

async fn the_quota_refuses_the_upload_that_would_cross_it(backend: Backend) {
    let Some(mut env) = media_env(backend, "media_quota").await else {
        return;
    };
    env.settings.storage.quota_bytes = 5 * MIB as u64;
    env.settings.storage.max_video_bytes = 4 * MIB as u64;
    let app = spawn_app(&env).await;
    let (_, key) = app.user("saver", 0).await;
    let (status, first) = upload(&app, &key, "video", "a.mp4", file_of(MP4, 3 * MIB)).await;
    assert_eq!(status, 201, "{first}");
    // Both refusals come from the request's length, before a byte of the body is read.
    // (Sent by hand, the head only, then the answer read: a client that insists on
    // sending the body may see the connection close under it.)
    let answer = head_only_upload(&app, &key, 3 * MIB as u64).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("storage_quota"), "{answer}");
    // Over the purpose's own limit.
    let answer = head_only_upload(&app, &key, 5 * MIB as u64).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("file_too_large"), "{answer}");
    let me = app.get_json(&key, "/v1/me").await;
    assert_eq!(
        me["storage"]["used_bytes"],
        3 * MIB as u64,
        "only the first is held: {me}"
    );
    assert_eq!(me["storage"]["quota_bytes"], 5 * MIB as u64);
    // Room again once the first is deleted and collected.
    let id = first["id"].as_str().unwrap();
    let r = app
        .client
        .delete(app.url(&format!("/v1/uploads/{id}")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let later = Utc::now() + Duration::seconds(env.settings.storage.delete_grace_secs as i64 + 1);
    sweep::sweep(&app.platform.db, &app.platform.storage, later)
        .await
        .unwrap();
    let (status, body) = upload(&app, &key, "video", "b.mp4", file_of(MP4, 3 * MIB)).await;
    assert_eq!(status, 201, "{body}");
    media_done(env, app).await;
}

async fn deleted_uploads_lose_their_bytes_after_the_grace_and_strays_are_collected(
    backend: Backend,
) {
    let Some((env, app)) = media_app(backend, "media_collector").await else {
        return;
    };
    let (user, key) = app.user("tidy", 0).await;
    let (db, storage) = (&app.platform.db, &app.platform.storage);
    let (_, view) = upload(&app, &key, "image", "a.png", file_of(PNG, 10_000)).await;
    let (id, url) = (
        view["id"].as_str().unwrap(),
        view["url"].as_str().unwrap().to_owned(),
    );
    let r = app
        .client
        .delete(app.url(&format!("/v1/uploads/{id}")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let r = app
        .client
        .get(app.url(&format!("/v1/uploads/{id}")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404, "gone for the API at once");
    if !backend.is_real() {
        // The API's own URLs die with the delete (a presigned S3 URL lives to its expiry).
        assert_eq!(fetch(&app, &url, &[]).await.status(), 404);
    }
    let stored_key = Key::new(&user.id, "image", id, "png").unwrap();
    assert!(
        storage.head(&stored_key).await.is_ok(),
        "the bytes stay during the grace"
    );

    // A stray object (a crash between a write and its row) and an abandoned upload.
    let stray = Key::new(&user.id, "image", "stray", "png").unwrap();
    storage
        .put(&stray, Bytes::from(file_of(PNG, 500)), sniff(PNG).unwrap())
        .await
        .unwrap();
    records::usage::reserve(db, &user.id, 777, u64::MAX)
        .await
        .unwrap();
    records::create_pending(db, &user.id, "video", None, 777, None)
        .await
        .unwrap();

    let now = Utc::now();
    let early = sweep::sweep(db, storage, now).await.unwrap();
    assert_eq!(
        (early.removed, early.abandoned, early.orphans),
        (0, 0, 0),
        "nothing is due yet"
    );
    let grace = Duration::seconds(
        env.settings
            .storage
            .delete_grace_secs
            .max(env.settings.storage.pending_ttl_secs) as i64
            + 1,
    );
    let swept = sweep::sweep(db, storage, now + grace).await.unwrap();
    assert_eq!(
        (swept.removed, swept.abandoned, swept.orphans),
        (1, 1, 1),
        "{swept:?}"
    );
    assert!(matches!(
        storage.head(&stored_key).await,
        Err(StorageError::NotFound)
    ));
    assert!(matches!(
        storage.head(&stray).await,
        Err(StorageError::NotFound)
    ));
    assert_eq!(
        records::usage::used(db, &user.id).await.unwrap(),
        0,
        "every byte given back"
    );
    media_done(env, app).await;
}

/// An upload's request head announcing `length` bytes and no body: the answer, as text.
pub async fn head_only_upload(app: &TestApp, key: &str, length: u64) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut conn = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let head = format!(
        "POST /v1/uploads?purpose=video HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: multipart/form-data; boundary=b\r\nContent-Length: {length}\r\n\r\n"
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(std::time::Duration::from_secs(10), conn.read(&mut buf))
        .await
        .expect("an answer without the body")
        .unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}
