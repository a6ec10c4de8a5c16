//! Streamed uploads: sniffed, measured, checksummed, READY; a disguised executable is
//! REJECTED; fields in the wrong order or a bad purpose are refused with what was wrong;
//! another tenant sees nothing of it.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::*;
use crate::on_every_store;

on_every_store!(
    an_upload_of_a_few_mib_streams_in_sniffed_checksummed_and_ready,
    a_renamed_exe_posing_as_mp4_is_rejected_and_bad_forms_are_refused,
    another_tenant_cannot_read_list_complete_or_delete_an_upload,
);

async fn an_upload_of_a_few_mib_streams_in_sniffed_checksummed_and_ready(backend: Backend) {
    let Some((env, app)) = media_app(backend, "media_upload_ready").await else {
        return;
    };
    let (_, key) = app.user("uploader", 0).await;
    let bytes = file_of(MP4, 3 * 1024 * 1024 + 17);
    let sha = hex::encode(Sha256::digest(&bytes));
    let (status, view) = upload(&app, &key, "video", "clip.mp4", bytes.clone()).await;
    assert_eq!(status, 201, "{view}");
    assert_eq!(view["status"], "READY", "{view}");
    assert_eq!(view["size"], bytes.len() as u64);
    assert_eq!(view["content_type"], "video/mp4");
    assert_eq!(view["sha256"], sha);
    let id = view["id"].as_str().unwrap();
    let read = app.get_json(&key, &format!("/v1/uploads/{id}")).await;
    assert_eq!(
        (read["status"].as_str(), read["sha256"].as_str()),
        (Some("READY"), Some(sha.as_str()))
    );
    let url = read["url"].as_str().unwrap();
    let got = fetch(&app, url, &[]).await;
    assert_eq!(got.status(), 200);
    assert_eq!(
        got.bytes().await.unwrap().as_ref(),
        bytes.as_slice(),
        "the stored bytes are the sent ones"
    );
    let listed = app.get_json(&key, "/v1/uploads?limit=10").await;
    assert_eq!(listed["items"][0]["id"], id, "{listed}");
    let me = app.get_json(&key, "/v1/me").await;
    assert_eq!(me["storage"]["used_bytes"], bytes.len() as u64, "{me}");
    // The fleet's total (the storage gauge) counts them, on every database.
    let total = conveyor::storage::records::bytes_stored(&app.platform.db)
        .await
        .unwrap();
    assert_eq!(total, bytes.len() as i64);
    media_done(env, app).await;
}

async fn a_renamed_exe_posing_as_mp4_is_rejected_and_bad_forms_are_refused(backend: Backend) {
    let Some((env, app)) = media_app(backend, "media_upload_rejected").await else {
        return;
    };
    let (_, key) = app.user("trickster", 0).await;
    let (status, body) = upload(&app, &key, "video", "holiday.mp4", file_of(EXE, 200_000)).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "unsupported_media_type", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("REJECTED"), "{message}");
    // The refusal is on record, and nothing of it is held against the quota.
    let id = message.split_whitespace().nth(1).unwrap();
    let read = app.get_json(&key, &format!("/v1/uploads/{id}")).await;
    assert_eq!(read["status"], "REJECTED", "{read}");
    assert!(
        read["reason"]
            .as_str()
            .unwrap()
            .contains("not one of the video types"),
        "{read}"
    );
    assert_eq!(read["url"], Value::Null);
    let me = app.get_json(&key, "/v1/me").await;
    assert_eq!(me["storage"]["used_bytes"], 0, "{me}");

    // An image that is really a video is refused too: the purpose decides what fits.
    let (status, body) = upload(&app, &key, "image", "photo.png", file_of(MP4, 5000)).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("unsupported_media_type")),
        "{body}"
    );
    // A bad purpose, and `file` before `purpose`.
    let (status, body) = upload(&app, &key, "spreadsheet", "a.mp4", file_of(MP4, 100)).await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (422, Some("purpose")),
        "{body}"
    );
    let form = reqwest::multipart::Form::new()
        .part(
            "file",
            reqwest::multipart::Part::bytes(file_of(MP4, 100)).file_name("a.mp4"),
        )
        .text("purpose", "video");
    let r = app
        .client
        .post(app.url("/v1/uploads"))
        .bearer_auth(&key)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("before `file`"),
        "{body}"
    );
    // Not multipart at all.
    let r = app
        .client
        .post(app.url("/v1/uploads"))
        .bearer_auth(&key)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400, "{:?}", r.text().await);
    media_done(env, app).await;
}

async fn another_tenant_cannot_read_list_complete_or_delete_an_upload(backend: Backend) {
    let Some((env, app)) = media_app(backend, "media_upload_owned").await else {
        return;
    };
    let (_, owner) = app.user("owner", 0).await;
    let (_, other) = app.user("other", 0).await;
    let (status, view) = upload(&app, &owner, "image", "a.png", file_of(PNG, 4096)).await;
    assert_eq!(status, 201, "{view}");
    let id = view["id"].as_str().unwrap();
    for (method, path) in [
        (reqwest::Method::GET, format!("/v1/uploads/{id}")),
        (reqwest::Method::DELETE, format!("/v1/uploads/{id}")),
        (reqwest::Method::POST, format!("/v1/uploads/{id}/complete")),
    ] {
        let r = app
            .client
            .request(method.clone(), app.url(&path))
            .bearer_auth(&other)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{method} {path} as another tenant");
    }
    let listed = app.get_json(&other, "/v1/uploads").await;
    assert_eq!(listed["items"], serde_json::json!([]), "{listed}");
    // Still there for its owner.
    let read = app.get_json(&owner, &format!("/v1/uploads/{id}")).await;
    assert_eq!(read["status"], "READY");
    media_done(env, app).await;
}
