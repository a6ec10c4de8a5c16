//! A 1 GiB upload through the API, to a `conveyor serve` process of its own (so nothing
//! else in the test binary moves the number): the server's resident memory, sampled
//! every 20 ms while the bytes stream, grows by less than 32 MiB. The body is made on
//! the fly, never held whole, on either side. A 256 MiB form field, the same way, grows
//! it by less than 16 MiB.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::stream;
use sha2::{Digest as _, Sha256};

use super::MP4;
use crate::helpers::process::*;

const GIB: u64 = 1 << 30;
const CHUNK: usize = 256 * 1024;

/// Resident set of `pid`, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The `i`th chunk of the upload: an MP4 signature, then a pattern.
fn chunk(i: u64) -> bytes::Bytes {
    let mut c: Vec<u8> = (0..CHUNK)
        .map(|j| ((i as usize * 31 + j) % 251) as u8)
        .collect();
    if i == 0 {
        c[..MP4.len()].copy_from_slice(MP4);
    }
    bytes::Bytes::from(c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_gib_upload_keeps_the_servers_memory_growth_under_32_mib() {
    let dir = tempfile::tempdir().unwrap();
    let key = cli_user(dir.path(), "big", 0);
    let port = free_port();
    let child = Running(
        command(BIN, dir.path())
            .arg("serve")
            .env("CONVEYOR__SERVER__PORT", port.to_string())
            .env("CONVEYOR__LOG__LEVEL", "warn")
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_ready(port).await;
    let pid = child.id();
    // Warm the paths an upload takes (allocator pools, the first connection), then
    // measure from there.
    let client = reqwest::Client::new();
    let url = format!("http://127.0.0.1:{port}/v1/uploads");
    let small = reqwest::multipart::Form::new()
        .text("purpose", "video")
        .part(
            "file",
            reqwest::multipart::Part::bytes(chunk(0).to_vec()).file_name("warm.mp4"),
        );
    let r = client
        .post(&url)
        .bearer_auth(&key)
        .multipart(small)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let before = rss(pid);
    let peak = Arc::new(AtomicU64::new(before));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let chunks = GIB / CHUNK as u64;
    let mut expected = Sha256::new();
    for i in 0..chunks {
        expected.update(chunk(i));
    }
    let body = reqwest::Body::wrap_stream(stream::iter(
        (0..chunks).map(|i| Ok::<_, std::io::Error>(chunk(i))),
    ));
    let form = reqwest::multipart::Form::new()
        .text("purpose", "video")
        .part(
            "file",
            reqwest::multipart::Part::stream_with_length(body, GIB).file_name("big.mp4"),
        );
    let started = std::time::Instant::now();
    let r = client
        .post(&url)
        .bearer_auth(&key)
        .multipart(form)
        .timeout(Duration::from_secs(600))
        .send()
        .await
        .unwrap();
    let took = started.elapsed();
    sampler.abort();
    let status = r.status();
    let view: serde_json::Value = r.json().await.unwrap();
    assert_eq!(status, 201, "{view}");
    assert_eq!(view["size"], GIB);
    assert_eq!(view["sha256"], hex::encode(expected.finalize()));
    let growth = peak.load(Ordering::Relaxed).saturating_sub(before);
    eprintln!(
        "1 GiB upload: {:.1} s ({:.0} MiB/s), server RSS {} MiB before, peak growth {:.1} MiB",
        took.as_secs_f64(),
        1024.0 / took.as_secs_f64(),
        before >> 20,
        growth as f64 / (1 << 20) as f64
    );
    assert!(growth < 32 << 20, "RSS grew by {growth} bytes");
}

/// A 256 MiB `purpose` field (the issue 55 finding: the server read it whole, growing by
/// 570–700 MiB before its 422) is refused at once, and the server's resident memory grows
/// by less than 16 MiB meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_256_mib_purpose_field_leaves_the_servers_memory_alone() {
    let dir = tempfile::tempdir().unwrap();
    let key = cli_user(dir.path(), "flood", 0);
    let port = free_port();
    let child = Running(
        command(BIN, dir.path())
            .arg("serve")
            .env("CONVEYOR__SERVER__PORT", port.to_string())
            .env("CONVEYOR__LOG__LEVEL", "warn")
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_ready(port).await;
    let pid = child.id();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    // Warm the path (the first connection, the allocator), then measure from there.
    let (warm, _) = super::raw::huge_purpose(addr, &key, 4096).await;
    assert_eq!(warm.status, 413, "{warm:?}");
    let before = rss(pid);
    let peak = Arc::new(AtomicU64::new(before));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let (answer, sent) = super::raw::huge_purpose(addr, &key, 256 << 20).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    sampler.abort();
    let growth = peak.load(Ordering::Relaxed).saturating_sub(before);
    eprintln!(
        "256 MiB purpose field: {} after {:?}; {:.1} MiB sent before the close; server RSS {} MiB before, peak growth {:.1} MiB",
        answer.status,
        answer.after,
        sent as f64 / (1 << 20) as f64,
        before >> 20,
        growth as f64 / (1 << 20) as f64
    );
    assert_eq!(answer.status, 413, "{answer:?}");
    assert_eq!(answer.body["error"]["field"], "purpose", "{answer:?}");
    assert!(growth < 16 << 20, "RSS grew by {growth} bytes");
}
