//! A waiting task's place in line: its position falls to 0 as the work ahead of it
//! starts, its estimated start holds (within 2× on a steady load), and its followers
//! are told as it moves.

use std::time::{Duration, Instant};

use conveyor::broker::settings::QueueOverride;
use futures::StreamExt as _;
use serde_json::json;

use super::*;
use crate::helpers::tasks;
use crate::on_every_backend;

on_every_backend!(a_waiting_tasks_place_counts_down_and_its_estimate_holds);

/// A copywriting task of 200 ms.
fn work() -> Value {
    json!({ "kind": "copywriting", "prompt": "x", "params": { "simulate": { "step_ms": 200 } } })
}

async fn a_waiting_tasks_place_counts_down_and_its_estimate_holds(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "plans_line").await else {
        return;
    };
    // One slot of 200 ms: ~5 tasks a second, one at a time.
    env.settings.queues.insert(
        "ai.short".into(),
        QueueOverride {
            prefetch: Some(1),
            ..Default::default()
        },
    );
    env.settings.live.refresh_ms = 300;
    let app = spawn_app(&env).await;
    let (_, key) = app.user("patient", 1_000_000).await;
    app.start_consumers();
    // A steady load: the lane's pace is known before the task we watch is submitted.
    let mut ids = Vec::new();
    for _ in 0..6 {
        ids.push(tasks::submit_id(&app, &key, work()).await);
    }
    // Known once a few have started (one at a time, in order): the fourth started.
    for id in &ids[..4] {
        wait_until(
            Duration::from_secs(20),
            "the first tasks to start",
            || async { tasks::task(&app, &key, id).await["status"] != "PENDING" },
        )
        .await;
    }
    for _ in 0..14 {
        ids.push(tasks::submit_id(&app, &key, work()).await);
    }
    let watched = ids.last().unwrap().clone();
    // Its followers hear where it stands, computed between stored events.
    let r = app
        .client
        .get(app.url(&format!("/v1/tasks/{watched}/events")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut stream = r.bytes_stream();
    let mut seen = String::new();
    let heard = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(chunk)) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("event: line") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(heard, "a line event on the stream: {seen}");
    drop(stream);
    // Polled: the position never grows and reaches 0; the first estimate against the
    // real start.
    let first_seen = Instant::now();
    let mut estimate: Option<f64> = None;
    let mut positions = Vec::new();
    let started_after = loop {
        let t = tasks::task(&app, &key, &watched).await;
        if t["status"] != "PENDING" {
            break first_seen.elapsed().as_secs_f64();
        }
        let line = &t["line"];
        assert_eq!(line["lane"], "ai.short", "{t}");
        positions.push(line["position"].as_u64().unwrap());
        if estimate.is_none() {
            estimate = line["estimated_wait_ms"].as_f64().map(|ms| ms / 1000.0);
        }
        assert!(first_seen.elapsed() < Duration::from_secs(30), "{t}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        positions.windows(2).all(|w| w[1] <= w[0]),
        "the position only falls: {positions:?}"
    );
    assert_eq!(positions.last(), Some(&0), "{positions:?}");
    assert!(positions[0] >= 5, "it waited behind others: {positions:?}");
    let estimate = estimate.expect("an estimate once the lane has a pace");
    let ratio = estimate / started_after.max(0.05);
    eprintln!("estimated {estimate:.2} s, started after {started_after:.2} s");
    assert!(
        (0.5..=2.0).contains(&ratio),
        "estimate {estimate:.2} s against the real {started_after:.2} s"
    );
    done(env, app).await;
}
