//! Download URLs: the bytes with the right headers, single ranges as 206 (a browser's
//! video seeks with them), 416 past the end, 304 on a matching ETag; a URL stops working
//! after it expires and when its signature or key is altered.

use super::*;
use crate::on_every_store;

on_every_store!(
    a_download_url_serves_ranges_and_conditional_requests,
    a_download_url_stops_working_when_expired_or_altered,
);

async fn a_download_url_serves_ranges_and_conditional_requests(backend: Backend) {
    let Some((env, app)) = media_app(backend, "media_files_ranges").await else {
        return;
    };
    let (_, key) = app.user("viewer", 0).await;
    let bytes = file_of(MP4, 1_000_000);
    let (status, view) = upload(&app, &key, "video", "clip.mp4", bytes.clone()).await;
    assert_eq!(status, 201, "{view}");
    let url = view["url"].as_str().unwrap();

    let whole = fetch(&app, url, &[]).await;
    assert_eq!(whole.status(), 200);
    let h = whole.headers().clone();
    assert_eq!(h["content-length"], "1000000");
    if !backend.is_real() {
        // What the API sets itself (S3 answers with its own headers).
        assert_eq!(h["content-type"], "video/mp4");
        assert_eq!(h["accept-ranges"], "bytes");
        assert!(
            h["content-disposition"]
                .to_str()
                .unwrap()
                .starts_with("inline; filename="),
            "{h:?}"
        );
        assert!(
            h["cache-control"]
                .to_str()
                .unwrap()
                .starts_with("private, max-age="),
            "{h:?}"
        );
    }
    let etag = h["etag"].to_str().unwrap().to_owned();

    let part = fetch(&app, url, &[("range", "bytes=1000-1999")]).await;
    assert_eq!(part.status(), 206);
    assert_eq!(part.headers()["content-range"], "bytes 1000-1999/1000000");
    assert_eq!(part.bytes().await.unwrap().as_ref(), &bytes[1000..2000]);
    let tail = fetch(&app, url, &[("range", "bytes=-10")]).await;
    assert_eq!(tail.status(), 206);
    assert_eq!(
        tail.bytes().await.unwrap().as_ref(),
        &bytes[bytes.len() - 10..]
    );
    let past = fetch(&app, url, &[("range", "bytes=2000000-")]).await;
    assert_eq!(past.status(), 416);
    let same = fetch(&app, url, &[("if-none-match", &etag)]).await;
    assert_eq!(same.status(), 304);
    media_done(env, app).await;
}

async fn a_download_url_stops_working_when_expired_or_altered(backend: Backend) {
    let Some(mut env) = media_env(backend, "media_files_expiry").await else {
        return;
    };
    env.settings.storage.url_ttl_secs = 2;
    let app = spawn_app(&env).await;
    let (_, key) = app.user("viewer", 0).await;
    let (_, a) = upload(&app, &key, "image", "a.png", file_of(PNG, 3000)).await;
    let (_, b) = upload(&app, &key, "image", "b.png", file_of(PNG, 3000)).await;
    let (url_a, url_b) = (a["url"].as_str().unwrap(), b["url"].as_str().unwrap());
    assert_eq!(fetch(&app, url_a, &[]).await.status(), 200);

    // Another file's signature on this file's path, and a flipped signature digit.
    let (path_a, query_a) = url_a.split_once('?').unwrap();
    let (_, query_b) = url_b.split_once('?').unwrap();
    let swapped = format!("{path_a}?{query_b}");
    assert_eq!(fetch(&app, &swapped, &[]).await.status(), 403, "{swapped}");
    let flipped = flip_last_signature_digit(url_a);
    assert_eq!(fetch(&app, &flipped, &[]).await.status(), 403, "{flipped}");
    let _ = query_a;

    // After the expiry (two seconds; S3 presigns in whole seconds, so a real wait is
    // the only honest check of the bucket's own expiry): refused from then on.
    wait_until(
        std::time::Duration::from_secs(10),
        "the URL to expire",
        || async { fetch(&app, url_a, &[]).await.status() == 403 },
    )
    .await;
    assert_eq!(
        fetch(&app, url_a, &[]).await.status(),
        403,
        "an expired URL"
    );
    // A fresh URL from the API works again.
    let id = a["id"].as_str().unwrap();
    let fresh = app.get_json(&key, &format!("/v1/uploads/{id}")).await;
    assert_eq!(
        fetch(&app, fresh["url"].as_str().unwrap(), &[])
            .await
            .status(),
        200
    );
    media_done(env, app).await;
}

/// The URL with the last hex digit of its signature changed (`sig=` locally,
/// `X-Amz-Signature=` on S3).
fn flip_last_signature_digit(url: &str) -> String {
    let marker = if url.contains("X-Amz-Signature=") {
        "X-Amz-Signature="
    } else {
        "sig="
    };
    let at = url.find(marker).unwrap() + marker.len();
    let end = url[at..].find('&').map_or(url.len(), |i| at + i);
    let mut s = url.to_owned();
    let last = s.as_bytes()[end - 1];
    let new = if last == b'0' { "1" } else { "0" };
    s.replace_range(end - 1..end, new);
    s
}
