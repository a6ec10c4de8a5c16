//! A customer's webhook receiver, in the test: it records every request (when, headers,
//! body) and answers as scripted (500 for the first `fail_first` requests, or never,
//! hanging, when `hang`); [`verify`] checks recorded deliveries' signatures, by the
//! scheme and with the Standard Webhooks reference library (Python,
//! tools/standardwebhooks/) where it is installed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;

use crate::helpers::TestApp;

#[derive(Debug, Clone)]
pub struct Received {
    pub at: Instant,
    pub headers: HashMap<String, String>,
    pub body: String,
}

impl Received {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap()
    }

    pub fn id(&self) -> &str {
        &self.headers["webhook-id"]
    }
}

#[derive(Default)]
pub struct Script {
    pub fail_first: AtomicUsize,
    pub hang: AtomicBool,
    pub got: Mutex<Vec<Received>>,
}

pub struct Receiver {
    pub url: String,
    pub script: Arc<Script>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let script = Arc::new(Script::default());
        let s = script.clone();
        let app = axum::Router::new().route(
            "/hook",
            post(move |headers: HeaderMap, body: Bytes| {
                let s = s.clone();
                async move {
                    let received = Received {
                        at: Instant::now(),
                        headers: headers
                            .iter()
                            .map(|(k, v)| {
                                (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned())
                            })
                            .collect(),
                        body: String::from_utf8_lossy(&body).into_owned(),
                    };
                    s.got.lock().unwrap().push(received);
                    if s.hang.load(Ordering::SeqCst) {
                        // The receiver's behaviour, not a wait: a server that never answers.
                        tokio::time::sleep(Duration::from_secs(60)).await;
                    }
                    let failing = s
                        .fail_first
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                        .is_ok();
                    if failing {
                        (StatusCode::INTERNAL_SERVER_ERROR, "try again later")
                    } else {
                        (StatusCode::OK, "thanks")
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver {
            url: format!("http://{addr}/hook"),
            script,
        }
    }

    pub fn got(&self) -> Vec<Received> {
        self.script.got.lock().unwrap().clone()
    }

    /// Waits until `n` requests came; what came by then (one too many shows only with
    /// [`Receiver::wait_for_all`]).
    pub async fn wait_for(&self, n: usize, within: Duration) -> Vec<Received> {
        let deadline = Instant::now() + within;
        while self.got().len() < n {
            assert!(
                Instant::now() < deadline,
                "{} of {n} deliveries within {within:?}: {:#?}",
                self.got().len(),
                self.got()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.got()
    }

    /// Waits until `n` requests came and `app` has no delivery left on its way (its
    /// deliveries' queue drained, retries included): one too many is here by then.
    pub async fn wait_for_all(&self, app: &TestApp, n: usize, within: Duration) -> Vec<Received> {
        self.wait_for(n, within).await;
        app.drain_key("webhooks.deliver").await;
        self.got()
    }
}

/// Each of `received` checked against `secret`: "ok" or why not. Checked here, by the
/// scheme itself (HMAC-SHA256 of `{id}.{timestamp}.{body}` with the base64 key after
/// `whsec_`, any `v1,` entry of `webhook-signature`, a timestamp within five minutes),
/// written apart from conveyor's signer so a mistake in one is not the other's; and
/// again by the Standard Webhooks reference library where it is installed (required
/// under CONVEYOR_REQUIRE_SERVICES=1), which must say the same.
pub fn verify(secret: &str, received: &[Received]) -> Vec<String> {
    let ours: Vec<String> = received.iter().map(|r| by_the_scheme(secret, r)).collect();
    if let Some(reference) = by_the_reference_library(secret, received) {
        assert_eq!(
            ours.iter().map(|v| v == "ok").collect::<Vec<_>>(),
            reference.iter().map(|v| v == "ok").collect::<Vec<_>>(),
            "the test's check and the reference library disagree: ours {ours:?}, theirs {reference:?}"
        );
    }
    ours
}

/// The Standard Webhooks check, in a few lines: "ok" or why not.
fn by_the_scheme(secret: &str, r: &Received) -> String {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    let Some(key) = secret
        .strip_prefix("whsec_")
        .and_then(|k| STANDARD.decode(k).ok())
    else {
        return format!("error: the secret {secret:?} is not whsec_ + base64");
    };
    let header = |name: &str| r.headers.get(name).map(String::as_str).unwrap_or_default();
    let (id, timestamp, signatures) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        header("webhook-signature"),
    );
    let Ok(at) = timestamp.parse::<i64>() else {
        return format!("error: webhook-timestamp {timestamp:?} is not a number");
    };
    let now = chrono::Utc::now().timestamp();
    if (now - at).abs() > 300 {
        return format!("error: webhook-timestamp {at} is {} s from now", now - at);
    }
    let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &key);
    let expected = STANDARD.encode(aws_lc_rs::hmac::sign(
        &key,
        format!("{id}.{timestamp}.{}", r.body).as_bytes(),
    ));
    let listed: Vec<&str> = signatures
        .split(' ')
        .filter_map(|s| s.strip_prefix("v1,"))
        .collect();
    if listed.is_empty() {
        return format!("error: no v1 signature in {signatures:?}");
    }
    if listed.contains(&expected.as_str()) {
        "ok".to_owned()
    } else {
        format!("error: no signature of {listed:?} matches")
    }
}

/// The reference library's verdicts, or `None` where it is not installed (a failure
/// under CONVEYOR_REQUIRE_SERVICES=1).
fn by_the_reference_library(secret: &str, received: &[Received]) -> Option<Vec<String>> {
    let venv =
        std::env::var("CONVEYOR_SWH_VENV").unwrap_or_else(|_| "/var/tmp/conveyor-swh".into());
    let python = format!("{venv}/bin/python");
    if !std::path::Path::new(&python).exists() {
        assert!(
            !crate::helpers::required(),
            "the Standard Webhooks library is not installed and CONVEYOR_REQUIRE_SERVICES=1 (bash tools/standardwebhooks/setup.sh)"
        );
        eprintln!(
            "signatures checked by the test alone: the reference library is not installed (tools/standardwebhooks/setup.sh)"
        );
        return None;
    }
    let input: String = received
        .iter()
        .map(|r| {
            serde_json::json!({ "secret": secret, "headers": r.headers, "body": r.body })
                .to_string()
                + "\n"
        })
        .collect();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tools/standardwebhooks/verify.py"
    );
    let mut child = std::process::Command::new(python)
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let verdicts: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        verdicts.len(),
        received.len(),
        "the reference library answered {verdicts:?} for {} deliveries",
        received.len()
    );
    Some(verdicts)
}
