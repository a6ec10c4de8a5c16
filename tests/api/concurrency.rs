//! A queue's concurrency changed at run time: the running consumer follows (prefetch and
//! throughput) without a restart, and nothing is lost or handled twice.

use std::time::{Duration, Instant};

use crate::helpers::WORK;
use conveyor::broker::settings::QueueOverride;
use conveyor::broker::{Envelope, Target};
use serde_json::json;

use crate::helpers::{Backend, Harness, Recorder, wait_until};

crate::on_every_backend!(a_running_consumer_follows_a_concurrency_change);

/// Messages finished a second, timed over the next `n`.
async fn rate(rec: &Recorder, n: u32) -> f64 {
    let before = rec.total_effects();
    let start = Instant::now();
    wait_until(Duration::from_secs(30), "the next messages", || {
        std::future::ready(rec.total_effects() >= before + n)
    })
    .await;
    f64::from(n) / start.elapsed().as_secs_f64()
}

async fn a_running_consumer_follows_a_concurrency_change(backend: Backend) {
    let Some(h) = Harness::configured(backend, "concurrency", |env| {
        env.settings.consumer.settings_poll_ms = 100;
        env.settings.queues.insert(
            "core.work".into(),
            QueueOverride {
                prefetch: Some(2),
                ..Default::default()
            },
        );
    })
    .await
    else {
        return;
    };
    let platform = &h.platform;
    let (rec, consumer) = h.record();
    let total = 400;
    for i in 0..total {
        let msg = Envelope::new("test.work", json!({ "sleep_ms": 50, "n": i }));
        platform
            .broker
            .publish(Target::Queue(&WORK), &msg)
            .await
            .unwrap();
    }
    // Two at a time, 50 ms each: about 40 a second, measured once it runs at its pace
    // (both slots taken twice).
    wait_until(Duration::from_secs(10), "the consumer to run", || {
        std::future::ready(rec.total_effects() >= 4)
    })
    .await;
    let slow = rate(&rec, 40).await;
    assert!(slow <= 60.0, "prefetch 2 finished {slow:.0} a second");

    let started = Instant::now();
    conveyor::consumer::concurrency::set(&platform.db, "core.work", 20, "test:ops")
        .await
        .unwrap();
    wait_until(Duration::from_secs(5), "the consumer to follow", || async {
        platform.tally.consumed() == [("core.work", 20)]
    })
    .await;
    let followed = started.elapsed();
    let fast = rate(&rec, 200).await;
    assert!(
        fast >= slow * 3.0,
        "prefetch 20 finished {fast:.0} a second, prefetch 2 {slow:.0}"
    );
    eprintln!("concurrency 2 -> 20 followed in {followed:?}: {slow:.0}/s -> {fast:.0}/s");
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
    consumer.stop().await;
    h.finish().await;
}
