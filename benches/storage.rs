//! Media throughput: a file uploaded and downloaded through the API against the same
//! bytes written to and read from the store directly (the floor), on the local store and
//! on the S3 server (SeaweedFS, tools/seaweedfs/start.sh) when it answers.
//!
//!   cargo bench --bench storage -- [MiB=100] [rounds=3]
//!
//! Upload through the API = multipart POST /v1/uploads (parse, sniff, SHA-256, quota,
//! rows, multipart writes). Floor = `object_store`'s WriteMultipart with the same part
//! size, from the same in-memory chunks. Download through the API = GET of the URL the
//! API hands out (the API's ranged file route on the local store; a presigned GET, which
//! the bucket serves, on S3). Floor = `object_store` get, streamed. Goal: >= 0.7x.

// Bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Instant;

use bytes::Bytes;
use conveyor::app::Application;
use conveyor::storage::settings::Backend;
use futures::StreamExt as _;
use object_store::{ObjectStoreExt as _, WriteMultipart};
use tokio_util::sync::CancellationToken;

const CHUNK: usize = 1 << 20;
const MP4: &[u8] = b"\0\0\0\x18ftypmp42\0\0\0\0mp42isom";

fn chunks(mib: usize) -> Vec<Bytes> {
    (0..mib)
        .map(|i| {
            let mut c: Vec<u8> = (0..CHUNK).map(|j| ((i * 31 + j) % 251) as u8).collect();
            if i == 0 {
                c[..MP4.len()].copy_from_slice(MP4);
            }
            Bytes::from(c)
        })
        .collect()
}

fn mib_per_s(mib: usize, secs: f64) -> f64 {
    mib as f64 / secs
}

async fn run(store: &str, mib: usize, rounds: usize, dir: &std::path::Path) {
    let mut s = conveyor::settings::Settings::load_from(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/config")),
        "local",
        std::env::vars(),
    )
    .unwrap();
    s.server.port = 0;
    s.log.level = "error".into();
    s.broker.embedded_path = dir.join(format!("{store}-broker.sqlite"));
    s.database.url = format!(
        "sqlite://{}?mode=rwc",
        dir.join(format!("{store}.sqlite")).display()
    );
    s.storage.root = dir.join(format!("{store}-objects")).display().to_string();
    s.storage.url_secret = "bench-url-secret-of-thirty-two-chars!".into();
    s.storage.quota_bytes = u64::MAX / 4;
    s.storage.max_video_bytes = u64::MAX / 4;
    if store == "s3" {
        s.storage.backend = Backend::S3;
        s.storage.endpoint = "http://127.0.0.1:8333".into();
        s.storage.bucket = "conveyor-test".into();
        s.storage.access_key_id = "conveyor-test".into();
        s.storage.secret_access_key = "conveyor-test-secret-key-0123456789".into();
        s.storage.path_style = true;
        s.storage.allow_http = true;
        s.storage.prefix = format!("bench{}", std::process::id());
    }
    let app = Application::build(s.clone()).await.unwrap();
    let addr = app.addr();
    let platform = app.platform().clone();
    let (_, key) = conveyor::users::create(&platform.db, "bench", 0, false)
        .await
        .unwrap();
    let stop = CancellationToken::new();
    let server = tokio::spawn(app.run_until(stop.clone()));
    // The same store the app writes through, without the app: the floor.
    let raw = platform.storage.object_store();
    let data = chunks(mib);
    let client = reqwest::Client::new();
    let (mut up_api, mut up_floor, mut down_api, mut down_floor) = (vec![], vec![], vec![], vec![]);
    let mut up_hashed = vec![];
    for round in 0..rounds {
        // Floor: the same chunks straight into the store.
        let path = object_store::path::Path::from(format!("floor/{round}.mp4"));
        let t = Instant::now();
        let mut w = WriteMultipart::new_with_chunk_size(
            raw.put_multipart(&path).await.unwrap(),
            s.storage.part_bytes,
        );
        for c in &data {
            w.wait_for_capacity(1).await.unwrap();
            w.put(c.clone());
        }
        w.finish().await.unwrap();
        up_floor.push(t.elapsed().as_secs_f64());
        // The floor plus what every upload must do besides storing: its SHA-256.
        let t = Instant::now();
        let mut w = WriteMultipart::new_with_chunk_size(
            raw.put_multipart(&path).await.unwrap(),
            s.storage.part_bytes,
        );
        let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
        for c in &data {
            sha2::Digest::update(&mut hasher, c);
            w.wait_for_capacity(1).await.unwrap();
            w.put(c.clone());
        }
        w.finish().await.unwrap();
        let _ = sha2::Digest::finalize(hasher);
        up_hashed.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let mut body = raw.get(&path).await.unwrap().into_stream();
        let mut n = 0;
        while let Some(c) = body.next().await {
            n += c.unwrap().len();
        }
        assert_eq!(n, mib * CHUNK);
        down_floor.push(t.elapsed().as_secs_f64());
        raw.delete(&path).await.unwrap();

        // Through the API.
        let stream = futures::stream::iter(data.clone().into_iter().map(Ok::<_, std::io::Error>));
        let form = reqwest::multipart::Form::new()
            .text("purpose", "video")
            .part(
                "file",
                reqwest::multipart::Part::stream_with_length(
                    reqwest::Body::wrap_stream(stream),
                    (mib * CHUNK) as u64,
                )
                .file_name("bench.mp4"),
            );
        let t = Instant::now();
        let r = client
            .post(format!("http://{addr}/v1/uploads"))
            .bearer_auth(&key)
            .multipart(form)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let view: serde_json::Value = r.json().await.unwrap();
        up_api.push(t.elapsed().as_secs_f64());
        assert_eq!(status, 201, "{view}");
        let url = view["url"].as_str().unwrap();
        let url = if url.starts_with('/') {
            format!("http://{addr}{url}")
        } else {
            url.to_owned()
        };
        let t = Instant::now();
        let mut body = client.get(&url).send().await.unwrap().bytes_stream();
        let mut n = 0;
        while let Some(c) = body.next().await {
            n += c.unwrap().len();
        }
        assert_eq!(n, mib * CHUNK);
        down_api.push(t.elapsed().as_secs_f64());
        let id = view["id"].as_str().unwrap();
        client
            .delete(format!("http://{addr}/v1/uploads/{id}"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (ua, uf, da, df) = (
        median(up_api),
        median(up_floor),
        median(down_api),
        median(down_floor),
    );
    let uh = median(up_hashed);
    println!(
        "{store:>5} upload   {mib} MiB: API {:>7.0} MiB/s  floor {:>7.0} MiB/s  = {:.2}x",
        mib_per_s(mib, ua),
        mib_per_s(mib, uf),
        uf / ua
    );
    println!(
        "{store:>5} upload   {mib} MiB: API {:>7.0} MiB/s  floor+SHA-256 {:>7.0} MiB/s  = {:.2}x",
        mib_per_s(mib, ua),
        mib_per_s(mib, uh),
        uh / ua
    );
    println!(
        "{store:>5} download {mib} MiB: API {:>7.0} MiB/s  floor {:>7.0} MiB/s  = {:.2}x",
        mib_per_s(mib, da),
        mib_per_s(mib, df),
        df / da
    );
    // The run's objects (deleted uploads wait for the collector otherwise).
    conveyor::storage::sweep::sweep(
        &platform.db,
        &platform.storage,
        chrono::Utc::now() + chrono::Duration::days(30),
    )
    .await
    .unwrap();
    stop.cancel();
    let _ = server.await;
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let mib: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(100);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    println!(
        "storage bench: {mib} MiB files, median of {rounds} rounds (x = API throughput / floor throughput)"
    );
    run("local", mib, rounds, dir.path()).await;
    if common::up("127.0.0.1:8333").await {
        run("s3", mib, rounds, dir.path()).await;
    } else {
        println!("   s3: skipped (no S3 server on 127.0.0.1:8333: tools/seaweedfs/start.sh)");
    }
}
