//! A queue's concurrency changed at run time: the running consumer follows (prefetch and
//! throughput) without a restart, and nothing is lost or handled twice.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::helpers::WORK;
use conveyor::broker::settings::QueueOverride;
use conveyor::broker::{Envelope, Target};
use serde_json::json;

use crate::helpers::{Backend, Recorder, TestEnv, start_consumer, wait_until};

crate::on_every_backend!(a_running_consumer_follows_a_concurrency_change);

/// Messages finished within `window`.
async fn rate(rec: &Recorder, window: Duration) -> u32 {
    let before = rec.total_effects();
    tokio::time::sleep(window).await;
    rec.total_effects() - before
}

async fn a_running_consumer_follows_a_concurrency_change(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "concurrency").await else {
        return;
    };
    env.settings.consumer.settings_poll_ms = 100;
    env.settings.queues.insert(
        "core.work".into(),
        QueueOverride {
            prefetch: Some(2),
            ..Default::default()
        },
    );
    let platform = env.platform().await;
    let rec = Arc::new(Recorder::default());
    let (token, consumer) = start_consumer(&platform, &rec);
    let total = 400;
    for i in 0..total {
        let msg = Envelope::new("test.work", json!({ "sleep_ms": 50, "n": i }));
        platform
            .broker
            .publish(Target::Queue(&WORK), &msg)
            .await
            .unwrap();
    }
    // Two at a time, 50 ms each: about 40 a second. A fixed wait: what is measured is a
    // rate over time, so the consumer must have run a while first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let slow = rate(&rec, Duration::from_secs(1)).await;
    assert!(slow <= 60, "prefetch 2 finished {slow} in a second");

    let started = Instant::now();
    conveyor::consumer::concurrency::set(&platform.db, "core.work", 20, "test:ops")
        .await
        .unwrap();
    wait_until(Duration::from_secs(5), "the consumer to follow", || async {
        platform.tally.consumed() == [("core.work", 20)]
    })
    .await;
    let followed = started.elapsed();
    let fast = rate(&rec, Duration::from_secs(1)).await;
    assert!(
        fast >= slow * 3,
        "prefetch 20 finished {fast} in a second, prefetch 2 {slow}"
    );
    eprintln!("concurrency 2 -> 20 followed in {followed:?}: {slow}/s -> {fast}/s");
    // And down again, mid-stream (on RabbitMQ another consumer swap).
    conveyor::consumer::concurrency::set(&platform.db, "core.work", 4, "test:ops")
        .await
        .unwrap();
    wait_until(
        Duration::from_secs(5),
        "the consumer to follow down",
        || async { platform.tally.consumed() == [("core.work", 4)] },
    )
    .await;

    wait_until(Duration::from_secs(30), "every message", || async {
        rec.total_effects() == total
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rec.total_effects(), total, "nothing handled twice");
    let doubled = rec
        .effects
        .lock()
        .unwrap()
        .values()
        .filter(|n| **n > 1)
        .count();
    assert_eq!(doubled, 0);
    token.cancel();
    consumer.await.unwrap().unwrap();
    env.cleanup(Some(&platform)).await;
}
