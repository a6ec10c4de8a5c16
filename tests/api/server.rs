//! The HTTP server's own limits (issue 17): a half-sent header or an idle keep-alive
//! connection is closed after `server.header_read_timeout_ms`; connections beyond
//! `server.max_connections` are closed at accept. Backend-independent: embedded only.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::helpers::{Backend, TestEnv, done, spawn_app, wait_until};

/// Reads until the server closes the connection (or `limit` passes): what it sent, and
/// how long it took to close.
async fn until_closed(s: &mut TcpStream, limit: Duration) -> (String, Option<Duration>) {
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(limit.saturating_sub(started.elapsed()), s.read(&mut buf)).await
        {
            Ok(Ok(0)) | Ok(Err(_)) => {
                return (
                    String::from_utf8_lossy(&got).into(),
                    Some(started.elapsed()),
                );
            }
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into(), None),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_header_and_an_idle_connection_are_closed_in_time() {
    let Some(mut env) = TestEnv::new(Backend::Embedded, "server_slowloris").await else {
        return;
    };
    env.settings.server.header_read_timeout_ms = 1000;
    let app = spawn_app(&env).await;
    // A client that connects and sends nothing.
    let mut mute = TcpStream::connect(app.addr).await.unwrap();
    let (_, closed) = until_closed(&mut mute, Duration::from_secs(5)).await;
    let closed = closed.expect("a silent connection is not kept open");
    assert!(
        closed < Duration::from_millis(2500),
        "silent for {closed:?}"
    );
    // Slowloris: a header that never ends.
    let mut slow = TcpStream::connect(app.addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n")
        .await
        .unwrap();
    let (_, closed) = until_closed(&mut slow, Duration::from_secs(5)).await;
    let closed = closed.expect("a half-sent header is not kept open");
    assert!(
        closed >= Duration::from_millis(800) && closed < Duration::from_millis(2500),
        "closed after {closed:?} (timeout 1 s)"
    );
    // A keep-alive connection: one request served, then closed once idle.
    let mut idle = TcpStream::connect(app.addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let (answer, closed) = until_closed(&mut idle, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let closed = closed.expect("an idle keep-alive connection is closed");
    assert!(closed < Duration::from_millis(2500), "idle for {closed:?}");
    done(env, app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_are_closed_at_accept() {
    let Some(mut env) = TestEnv::new(Backend::Embedded, "server_max_connections").await else {
        return;
    };
    env.settings.server.max_connections = 5;
    let app = spawn_app(&env).await;
    let mut held = Vec::new();
    for _ in 0..5 {
        held.push(TcpStream::connect(app.addr).await.unwrap());
    }
    // Let the server accept them all before the sixth.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut sixth = TcpStream::connect(app.addr).await.unwrap();
    let _ = sixth
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await;
    let (answer, closed) = until_closed(&mut sixth, Duration::from_secs(3)).await;
    assert!(
        closed.is_some() && answer.is_empty(),
        "the sixth is closed unanswered: {answer:?}"
    );
    // Free two slots: the client's pool may open a second connection for /metrics if the
    // first one is not back in its pool yet, and that must not be the one refused.
    drop(held.pop());
    drop(held.pop());
    // The server sees the closes on its next read; until then a connection is refused.
    wait_until(
        Duration::from_secs(5),
        "a freed slot to serve again",
        || async {
            match app.client.get(app.url("/healthz")).send().await {
                Ok(r) => r.status() == 200 && r.text().await.is_ok(),
                Err(_) => false,
            }
        },
    )
    .await;
    let text = app.metrics(None).await;
    assert!(
        text.lines().any(|l| l.starts_with("conveyor_http_connections_refused_total")
            && !l.ends_with(" 0")),
        "the refusal is counted"
    );
    drop(held);
    done(env, app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_carries_the_security_headers() {
    let Some(env) = TestEnv::new(Backend::Embedded, "server_headers").await else {
        return;
    };
    let app = spawn_app(&env).await;
    let (_, key) = app.user("header", 10).await;
    for (path, auth, csp_part) in [
        ("/v1/me", true, "default-src 'none'"),
        ("/v1/nothing-here", false, "default-src 'none'"),
        ("/demo", false, "connect-src 'self' ws: wss:"),
        ("/docs/", false, "script-src 'self'"),
    ] {
        let mut req = app.client.get(app.url(path));
        if auth {
            req = req.bearer_auth(&key);
        }
        let r = req.send().await.unwrap();
        let h = r.headers();
        let get = |n: &str| {
            h.get(n)
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default()
        };
        assert_eq!(get("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(get("x-frame-options"), "DENY", "{path}");
        assert_eq!(get("referrer-policy"), "no-referrer", "{path}");
        assert_eq!(get("cache-control"), "no-store", "{path}");
        let csp = get("content-security-policy");
        assert!(
            csp.contains("frame-ancestors 'none'") && csp.contains(csp_part),
            "{path}: {csp}"
        );
    }
    done(env, app).await;
}

/// An upgraded WebSocket keeps its connection's slot: sockets count against
/// `server.max_connections` for as long as they are open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websockets_count_against_the_connection_cap() {
    let Some(mut env) = TestEnv::new(Backend::Embedded, "server_ws_cap").await else {
        return;
    };
    env.settings.server.max_connections = 3;
    let app = spawn_app(&env).await;
    let (_, key) = app.user("socket", 10).await;
    let mut sockets = Vec::new();
    for _ in 0..2 {
        sockets.push(crate::live::connect(&app, &key).await);
    }
    // The ticket requests' pooled connection is the third; a fourth is refused.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut fourth = TcpStream::connect(app.addr).await.unwrap();
    let _ = fourth
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await;
    let (answer, closed) = until_closed(&mut fourth, Duration::from_secs(3)).await;
    assert!(
        closed.is_some() && answer.is_empty(),
        "two sockets + one client connection fill a cap of 3: {answer:?}"
    );
    // Closing a socket gives its slot back.
    drop(sockets.pop());
    wait_until(Duration::from_secs(5), "the slot back", || async {
        let Ok(mut fifth) = TcpStream::connect(app.addr).await else {
            return false;
        };
        let request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        if fifth.write_all(request).await.is_err() {
            return false;
        }
        let (answer, _) = until_closed(&mut fifth, Duration::from_secs(3)).await;
        answer.starts_with("HTTP/1.1 200")
    })
    .await;
    drop(sockets);
    done(env, app).await;
}
