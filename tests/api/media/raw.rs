//! Upload requests written by hand on a socket, for what a client library will not do:
//! stop in the middle of a form, or keep sending a field while the answer comes back.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

pub const BOUNDARY: &str = "conveyor-test-boundary";

/// The request head of `POST <path>` with a multipart body of `length` bytes.
pub fn head(path: &str, key: &str, length: u64) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {length}\r\n\r\n"
    )
}

/// The start of a form part named `name` (a file part when `file_name` is given).
pub fn part(name: &str, file_name: Option<&str>) -> String {
    let file = file_name.map_or(String::new(), |f| format!("; filename=\"{f}\""));
    format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"{file}\r\n\r\n")
}

/// An answer read off the socket: status and JSON body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    /// After how long the answer arrived.
    pub after: Duration,
}

/// Reads one HTTP answer (head and a `Content-Length` body) from `read`.
pub async fn answer(read: &mut (impl tokio::io::AsyncRead + Unpin), started: Instant) -> Answer {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = read.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                break;
            }
        }
    }
    let after = started.elapsed();
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .and_then(|(_, b)| serde_json::from_str(b).ok())
        .unwrap_or(Value::Null);
    Answer {
        status,
        body,
        after,
    }
}

/// Sends an upload whose `purpose` field is `field_bytes` long (announced whole in
/// `Content-Length`, as the finding's client did), writing it as fast as the server takes
/// it while reading the answer: the answer, and how many bytes of the body the server
/// took before it answered and closed.
pub async fn huge_purpose(addr: SocketAddr, key: &str, field_bytes: u64) -> (Answer, u64) {
    let start = part("purpose", None);
    let end = format!("\r\n{}--{BOUNDARY}--\r\n", part("file", Some("a.mp4")));
    let length = start.len() as u64 + field_bytes + end.len() as u64;
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let started = Instant::now();
    let sent = Arc::new(AtomicU64::new(0));
    let writer = {
        let sent = sent.clone();
        let head = head("/v1/uploads", key, length);
        // The write half comes back with the outcome, so it is not dropped (which sends
        // FIN: the server drops a request whose client half-closed) before the answer.
        tokio::spawn(async move {
            let sending = async {
                write.write_all(head.as_bytes()).await?;
                write.write_all(start.as_bytes()).await?;
                let chunk = vec![b'v'; 64 * 1024];
                let mut left = field_bytes;
                while left > 0 {
                    let n = left.min(chunk.len() as u64) as usize;
                    write.write_all(&chunk[..n]).await?;
                    sent.fetch_add(n as u64, Ordering::Relaxed);
                    left -= n as u64;
                }
                write.write_all(end.as_bytes()).await
            };
            let outcome: std::io::Result<()> = sending.await;
            (write, outcome)
        })
    };
    let answer = tokio::time::timeout(Duration::from_secs(120), answer(&mut read, started))
        .await
        .expect("an answer");
    // The server closed the connection after its answer: the writer fails (or, on
    // today's code, had sent everything).
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    (answer, sent.load(Ordering::Relaxed))
}
