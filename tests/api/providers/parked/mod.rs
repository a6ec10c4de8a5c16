//! Parked provider jobs end to end, against the prediction-API fake (Replicate's
//! contract): a video task parks (WAITING, no worker held) and is polled on its
//! backoff, shows the provider's progress and finishes with its output stored
//! ([`polling`]); a callback finishes it before the next poll, and repeated, late or
//! forged callbacks change nothing ([`callbacks`]); a cancel while parked cancels at the
//! provider and refunds per policy, and a deadline enforced on the wait cancels the
//! provider's job and fails the task with its refund ([`ending`]); jobs parked too long
//! show on /ops and raise an alert ([`ops`]); an API of another shape plugs in by
//! configuration ([`shapes`]).

mod callbacks;
mod ending;
mod ops;
mod polling;
mod shapes;

use std::sync::Arc;
use std::time::{Duration, Instant};

use conveyor::broker::settings::QueueOverride;
use serde_json::{Value, json};

use super::fake_prediction::{self, CALLBACK_BASE, Fake};
use crate::helpers::*;

pub(super) const VIDEO_COST: i64 = 20;

pub(super) struct Parked {
    pub env: TestEnv,
    pub app: TestApp,
    pub fake: Arc<Fake>,
}

/// An app whose video and model3d kinds are served by the fake (model3d with a deadline
/// of `deadline_secs`), its checks after `delays_ms`; with `callbacks`, jobs are given
/// callback URLs (signed with `secret` when set).
pub(super) async fn parked_app(
    backend: Backend,
    test: &str,
    delays_ms: [u64; 5],
    callbacks: bool,
    secret: Option<&str>,
    deadline_secs: u64,
) -> Option<Parked> {
    let mut env = TestEnv::new(backend, test).await?;
    let (url, fake) = fake_prediction::start().await;
    let ai = env.settings.sections.get_mut("ai").unwrap();
    ai["providers"]["replicate"] = json!({
        "protocol": "replicate",
        "base_url": url,
        "api_key": "r8-test",
        "model": "5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa",
        "inputs": { "prompt": "prompt", "num_frames": "params.frames" },
        "webhook_secret": secret.unwrap_or(""),
        "expected_secs": 1,
    });
    ai["kinds"]["video"]["provider"] = json!("replicate");
    // 3D renders run for hours: a deadline the broker would refuse on a worker.
    ai["kinds"]["model3d"]["provider"] = json!("replicate");
    ai["kinds"]["model3d"]["deadline_secs"] = json!(deadline_secs);
    if callbacks {
        ai["callback_base_url"] = json!(CALLBACK_BASE);
    }
    for (i, ms) in delays_ms.iter().enumerate() {
        env.settings.queues.insert(
            format!("ai.check.{}", i + 1),
            QueueOverride {
                delay_ms: Some(*ms),
                ..Default::default()
            },
        );
    }
    env.settings.ops.sample_interval_ms = 200;
    *fake.secret.lock().unwrap() = secret.map(str::to_owned);
    let app = spawn_app(&env).await;
    *fake.app.lock().unwrap() = Some(app.url(""));
    app.start_consumers();
    Some(Parked { env, app, fake })
}

pub(super) async fn submit_video(app: &TestApp, key: &str, prompt: &str) -> String {
    submit(app, key, "video", prompt).await
}

pub(super) async fn submit(app: &TestApp, key: &str, kind: &str, prompt: &str) -> String {
    tasks::submit_id(
        app,
        key,
        json!({"kind": kind, "prompt": prompt, "params": {"frames": 81}}),
    )
    .await
}

/// Polls the task until `done` holds; every status and progress seen on the way.
pub(super) async fn watch(
    app: &TestApp,
    key: &str,
    id: &str,
    done: impl Fn(&Value) -> bool,
) -> (Value, Vec<(String, i64)>) {
    let start = Instant::now();
    let mut seen = Vec::new();
    loop {
        let t = tasks::task(app, key, id).await;
        let now = (
            t["status"].as_str().unwrap().to_owned(),
            t["progress"].as_i64().unwrap(),
        );
        if seen.last() != Some(&now) {
            seen.push(now);
        }
        if done(&t) {
            return (t, seen);
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "task {id}: {t}\nseen {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
