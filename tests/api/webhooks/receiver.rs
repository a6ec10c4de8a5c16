//! A customer's webhook receiver, in the test: it records every request (when, headers,
//! body) and answers as scripted (500 for the first `fail_first` requests, or never,
//! hanging, when `hang`); [`verify`] checks recorded deliveries with the Standard
//! Webhooks reference library (Python, tools/standardwebhooks/).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;

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

    /// Waits until `n` requests came (and a little more, to catch one too many).
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
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.got()
    }
}

/// The reference library's verdict on each of `received` with `secret`: "ok" or why not.
pub fn verify(secret: &str, received: &[Received]) -> Vec<String> {
    let venv =
        std::env::var("CONVEYOR_SWH_VENV").unwrap_or_else(|_| "/var/tmp/conveyor-swh".into());
    let python = format!("{venv}/bin/python");
    if !std::path::Path::new(&python).exists() {
        assert!(
            !crate::helpers::required(),
            "the Standard Webhooks library is not installed and CONVEYOR_REQUIRE_SERVICES=1 (bash tools/standardwebhooks/setup.sh)"
        );
        eprintln!("SKIPPED signature checks: run tools/standardwebhooks/setup.sh");
        return received.iter().map(|_| "ok".to_owned()).collect();
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
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}
