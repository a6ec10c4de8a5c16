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

/// PUTs `bytes` to a presign answer's URL with the headers it names.
async fn put(app: &TestApp, presigned: &Value, bytes: Vec<u8>) -> u16 {
    put_as(app, presigned, bytes, &[]).await
}

/// [`put`] with some of the named headers replaced (`(name, value)`).
async fn put_as(app: &TestApp, presigned: &Value, bytes: Vec<u8>, instead: &[(&str, &str)]) -> u16 {
    let mut req = app.client.put(presigned["upload_url"].as_str().unwrap());
    for (name, value) in presigned["headers"].as_object().unwrap() {
        let value = instead
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map_or(value.as_str().unwrap(), |(_, v)| *v);
        req = req.header(name.as_str(), value);
    }
    req.body(bytes).send().await.unwrap().status().as_u16()
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
    let id = body["upload"]["id"].as_str().unwrap().to_owned();
    let presigned = body;
    assert_eq!(presigned["headers"]["Content-Type"], "video/mp4");
    // Nothing there yet.
    let (status, early) = complete(&app, &key, &id).await;
    assert_eq!(
        (status, early["error"]["code"].as_str()),
        (409, Some("not_uploaded")),
        "{early}"
    );
    assert_eq!(put(&app, &presigned, bytes.clone()).await, 200);
    let (status, done_view) = complete(&app, &key, &id).await;
    assert_eq!(status, 200, "{done_view}");
    assert_eq!(done_view["status"], "READY");
    assert_eq!(done_view["sha256"], hex::encode(Sha256::digest(&bytes)));
    let got = fetch(&app, done_view["url"].as_str().unwrap(), &[]).await;
    assert_eq!(got.bytes().await.unwrap().len(), bytes.len());
    // Completing again answers it as it is.
    let (status, again) = complete(&app, &key, &id).await;
    assert_eq!((status, again["status"].as_str()), (200, Some("READY")));

    // More bytes than declared: the bucket refuses the PUT (its length is signed).
    let (_, body) = presign(
        &app,
        &key,
        json!({"purpose": "video", "content_type": "video/mp4", "size": 1000}),
    )
    .await;
    let id = body["upload"]["id"].as_str().unwrap().to_owned();
    let status = put(&app, &body, file_of(MP4, 1010)).await;
    assert_eq!(status, 403, "a longer body than signed");
    let (status, body) = complete(&app, &key, &id).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("not_uploaded")),
        "{body}"
    );
    // An executable declared as MP4.
    let (_, body) = presign(
        &app,
        &key,
        json!({"purpose": "video", "content_type": "video/mp4", "size": 4000}),
    )
    .await;
    let id = body["upload"]["id"].as_str().unwrap().to_owned();
    assert_eq!(put(&app, &body, file_of(EXE, 4000)).await, 200);
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
        bytes.len() as u64 + 1000,
        "the READY upload and the one still PENDING (its PUT refused) are held: {me}"
    );
    media_done(env, app).await;
}

on_every_store!(a_presigned_url_cannot_change_what_is_served);

/// The reproductions: an MP4 replaced by HTML after `complete` (served back as
/// HTML), a megabyte under an 11,676-byte declaration. The URL is signed over the
/// declared type and length, so the bucket refuses other ones; what is served is a copy
/// made at completion, so a PUT after it (the URL lives until it expires) changes
/// nothing served; a declared checksum is held to.
async fn a_presigned_url_cannot_change_what_is_served(backend: Backend) {
    let Some((env, app)) = media_app(backend, "media_presign_bound").await else {
        return;
    };
    if !backend.is_real() {
        // The local store has no presigned URLs (the test above checks the refusal).
        return media_done(env, app).await;
    }
    let (_, key) = app.user("bound", 0).await;
    let mp4 = file_of(MP4, 11_676);
    let (status, presigned) = presign(
        &app,
        &key,
        json!({"purpose": "video", "content_type": "video/mp4", "size": mp4.len()}),
    )
    .await;
    assert_eq!(status, 201, "{presigned}");
    let id = presigned["upload"]["id"].as_str().unwrap().to_owned();
    // Another type, another length: refused by the bucket itself.
    let html_type = put_as(
        &app,
        &presigned,
        mp4.clone(),
        &[("Content-Type", "text/html")],
    )
    .await;
    assert_eq!(html_type, 403, "a PUT as text/html");
    let bigger = put(&app, &presigned, file_of(MP4, 1_000_000)).await;
    assert_eq!(bigger, 403, "a megabyte under an 11,676-byte declaration");
    assert_eq!(put(&app, &presigned, mp4.clone()).await, 200);
    let (status, ready) = complete(&app, &key, &id).await;
    assert_eq!(
        (status, ready["status"].as_str()),
        (200, Some("READY")),
        "{ready}"
    );
    let sha = hex::encode(Sha256::digest(&mp4));
    assert_eq!(ready["sha256"], sha);

    // The same URL after completion, with the declared headers and other bytes.
    let mut html = b"<html><script>alert(document.domain)</script>".to_vec();
    html.resize(mp4.len(), b' ');
    assert_eq!(put(&app, &presigned, html).await, 200, "the URL lives on");
    let (status, again) = complete(&app, &key, &id).await;
    assert_eq!(
        (status, again["sha256"].as_str()),
        (200, Some(sha.as_str()))
    );
    let view = app.get_json(&key, &format!("/v1/uploads/{id}")).await;
    assert_eq!(
        (view["size"].as_u64(), view["sha256"].as_str()),
        (Some(mp4.len() as u64), Some(sha.as_str()))
    );
    for url in [
        ready["url"].as_str().unwrap(),
        view["url"].as_str().unwrap(),
    ] {
        let got = fetch(&app, url, &[]).await;
        assert_eq!(got.status(), 200);
        assert_eq!(got.headers()["content-type"], "video/mp4");
        assert_eq!(
            got.bytes().await.unwrap().as_ref(),
            mp4.as_slice(),
            "what was checked is served"
        );
    }
    let path_of = |u: &str| reqwest::Url::parse(u).unwrap().path().to_owned();
    assert_ne!(
        path_of(presigned["upload_url"].as_str().unwrap()),
        path_of(view["url"].as_str().unwrap()),
        "the served object is not the one the URL writes"
    );

    // A declared checksum: other bytes of the right type and length are refused, by the
    // bucket where it checks checksums, else at completion.
    let declared = file_of(MP4, 5_000);
    let mut other = declared.clone();
    other[4_000] ^= 0xff;
    let sum = hex::encode(Sha256::digest(&declared));
    let (status, presigned) = presign(
        &app,
        &key,
        json!({"purpose": "video", "content_type": "video/mp4", "size": declared.len(), "sha256": sum}),
    )
    .await;
    assert_eq!(status, 201, "{presigned}");
    assert!(
        presigned["headers"]["x-amz-checksum-sha256"].is_string(),
        "{presigned}"
    );
    let id = presigned["upload"]["id"].as_str().unwrap().to_owned();
    let id = match put(&app, &presigned, other).await {
        // The bucket checks checksums: the declared bytes then go up to the same URL.
        refused @ (400 | 403) => {
            assert_eq!(
                put(&app, &presigned, declared.clone()).await,
                200,
                "{refused}"
            );
            id
        }
        // It does not: completion refuses them, and a fresh upload takes the right ones.
        200 => {
            let (status, body) = complete(&app, &key, &id).await;
            assert_eq!(
                (status, body["error"]["code"].as_str()),
                (422, Some("checksum_mismatch")),
                "{body}"
            );
            let (status, presigned) = presign(
                &app,
                &key,
                json!({"purpose": "video", "content_type": "video/mp4", "size": declared.len(), "sha256": sum}),
            )
            .await;
            assert_eq!(status, 201);
            assert_eq!(put(&app, &presigned, declared).await, 200);
            presigned["upload"]["id"].as_str().unwrap().to_owned()
        }
        other => panic!("a PUT of other bytes answered {other}"),
    };
    let (status, body) = complete(&app, &key, &id).await;
    assert_eq!(
        (status, body["sha256"].as_str()),
        (200, Some(sum.as_str())),
        "{body}"
    );
    let (status, body) = presign(
        &app,
        &key,
        json!({"purpose": "video", "content_type": "video/mp4", "size": 10, "sha256": "xyz"}),
    )
    .await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (422, Some("sha256")),
        "{body}"
    );
    media_done(env, app).await;
}
