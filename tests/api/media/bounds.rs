//! What bounds an upload through the API (issue 55): a field other than the file is
//! refused as soon as it runs long, without the server reading the rest; one tenant's
//! uploads in progress are capped (`limits.uploads_concurrent`); a form whose head
//! stalls is cut off like a slow header, and so is a stalled body on the other upload
//! routes.

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

use super::raw::{self, BOUNDARY};
use super::*;
use crate::on_every_store;

on_every_store!(one_tenants_uploads_in_progress_are_capped_with_a_429);

/// No store or database is touched before the refusal: the embedded backends suffice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_256_mib_purpose_field_is_refused_at_once_without_being_read() {
    let Some((env, app)) = media_app(Backend::Embedded, "media_huge_field").await else {
        return;
    };
    let (_, key) = app.user("flooder", 0).await;
    let (answer, sent) = raw::huge_purpose(app.addr, &key, 256 << 20).await;
    assert_eq!(answer.status, 413, "{answer:?}");
    let error = &answer.body["error"];
    assert_eq!(error["code"], "field_too_large", "{answer:?}");
    assert_eq!(error["field"], "purpose", "{answer:?}");
    assert!(
        error["message"].as_str().unwrap().contains("256 bytes"),
        "{answer:?}"
    );
    assert!(answer.after < Duration::from_secs(5), "{answer:?}");
    // What the client managed to write is what the sockets' buffers took, not the field.
    assert!(
        sent < 32 << 20,
        "the server read {sent} bytes of a 256 MiB field"
    );
    eprintln!(
        "256 MiB purpose field: {} after {:?}, {:.1} MiB written before the close",
        answer.status,
        answer.after,
        sent as f64 / (1 << 20) as f64
    );
    // A form head of oversized part headers is refused too, naming no field.
    let stream = TcpStream::connect(app.addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let headers = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"purpose\"\r\nX-Pad: {}\r\n",
        "p".repeat(256 * 1024)
    );
    let started = Instant::now();
    write
        .write_all(raw::head("/v1/uploads", &key, headers.len() as u64 + 4).as_bytes())
        .await
        .unwrap();
    let _ = write.write_all(headers.as_bytes()).await;
    let answer = raw::answer(&mut read, started).await;
    assert_eq!(
        (answer.status, answer.body["error"]["code"].as_str()),
        (413, Some("form_too_large")),
        "{answer:?}"
    );
    media_done(env, app).await;
}

/// An upload that has sent its head and a little of its file, then waits.
async fn stalled_upload(app: &TestApp, key: &str) -> TcpStream {
    let mut form = raw::part("purpose", None);
    form.push_str("video\r\n");
    form.push_str(&raw::part("file", Some("clip.mp4")));
    let mut bytes = form.into_bytes();
    bytes.extend_from_slice(&file_of(MP4, 4096));
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    let length = bytes.len() as u64 + 1_000_000;
    s.write_all(raw::head("/v1/uploads", key, length).as_bytes())
        .await
        .unwrap();
    s.write_all(&bytes).await.unwrap();
    s
}

/// The uploads of `key` listed as PENDING (their rows exist once the head has arrived).
async fn pending(app: &TestApp, key: &str) -> usize {
    let listed = app.get_json(key, "/v1/uploads?limit=50").await;
    listed["items"].as_array().map_or(0, |items| {
        items.iter().filter(|u| u["status"] == "PENDING").count()
    })
}

async fn one_tenants_uploads_in_progress_are_capped_with_a_429(backend: Backend) {
    let Some(mut env) = media_env(backend, "media_upload_cap").await else {
        return;
    };
    env.settings.limits.insert("uploads_concurrent".into(), 2);
    let app = spawn_app(&env).await;
    let (_, key) = app.user("busy", 0).await;
    let (_, other) = app.user("neighbour", 0).await;
    let first = stalled_upload(&app, &key).await;
    let _second = stalled_upload(&app, &key).await;
    wait_until(
        Duration::from_secs(10),
        "two uploads in progress",
        || async { pending(&app, &key).await == 2 },
    )
    .await;
    // A third of the same tenant's is refused before its body is read.
    let form = reqwest::multipart::Form::new()
        .text("purpose", "image")
        .part(
            "file",
            reqwest::multipart::Part::bytes(file_of(PNG, 2048)).file_name("a.png"),
        );
    let r = app
        .client
        .post(app.url("/v1/uploads"))
        .bearer_auth(&key)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "5");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_many_uploads", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("uploads_concurrent"),
        "{body}"
    );
    // Another tenant is not held up by it.
    let (status, view) = upload(&app, &other, "image", "b.png", file_of(PNG, 2048)).await;
    assert_eq!(status, 201, "{view}");
    // One of the two goes away: its place is given back.
    drop(first);
    let since = Instant::now();
    loop {
        let (status, view) = upload(&app, &key, "image", "c.png", file_of(PNG, 2048)).await;
        if status == 201 {
            assert_eq!(view["status"], "READY", "{view}");
            break;
        }
        assert_eq!(status, 429, "{view}");
        assert!(
            since.elapsed() < Duration::from_secs(10),
            "no place given back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    media_done(env, app).await;
}

/// The form's head must arrive within `server.header_read_timeout_ms`, like a request's
/// header; the JSON routes under `/v1/uploads` keep the whole-request deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_form_head_and_a_stalled_presign_body_are_cut_off() {
    let Some(mut env) = media_env(Backend::Embedded, "media_upload_slow").await else {
        return;
    };
    env.settings.server.header_read_timeout_ms = 1000;
    env.settings.server.request_timeout_ms = 1000;
    let app = spawn_app(&env).await;
    let (_, key) = app.user("slow", 0).await;

    // `purpose` half sent, then nothing.
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    let started = Instant::now();
    s.write_all(raw::head("/v1/uploads", &key, 10_000).as_bytes())
        .await
        .unwrap();
    s.write_all(format!("{}vid", raw::part("purpose", None)).as_bytes())
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), raw::answer(&mut s, started))
        .await
        .expect("answered before the client gave up");
    assert_eq!(answer.status, 408, "{answer:?}");
    assert_eq!(answer.body["error"]["code"], "form_timeout", "{answer:?}");
    assert_eq!(answer.body["error"]["field"], "purpose", "{answer:?}");
    assert!(answer.after >= Duration::from_millis(900), "{answer:?}");

    // With `?purpose=` the quota was reserved before the head: a stall gives it back.
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    let started = Instant::now();
    s.write_all(raw::head("/v1/uploads?purpose=video", &key, 50_000).as_bytes())
        .await
        .unwrap();
    s.write_all(b"--").await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), raw::answer(&mut s, started))
        .await
        .expect("answered before the client gave up");
    assert_eq!(answer.status, 408, "{answer:?}");
    assert_eq!(answer.body["error"]["field"], "file", "{answer:?}");
    let me = app.get_json(&key, "/v1/me").await;
    assert_eq!(me["storage"]["used_bytes"], 0, "{me}");

    // A presign request whose JSON body stalls.
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    let started = Instant::now();
    s.write_all(
        format!(
            "POST /v1/uploads/presign HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\n\
             Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"purpose\":"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), raw::answer(&mut s, started))
        .await
        .expect("answered before the client gave up");
    assert_eq!(answer.status, 408, "{answer:?}");
    assert_eq!(answer.body["error"]["code"], "timeout", "{answer:?}");
    media_done(env, app).await;
}
