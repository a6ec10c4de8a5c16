//! A receiver that hangs does not delay another tenant's deliveries: its deliveries hold
//! at most `per_endpoint_concurrency` of a process's slots, the rest step aside.

use std::time::{Duration, Instant};

use serde_json::json;

use super::receiver::Receiver;
use super::{endpoint, webhooks_env};
use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(a_hanging_receiver_does_not_delay_another_tenant);

async fn a_hanging_receiver_does_not_delay_another_tenant(backend: Backend) {
    let Some(mut env) = webhooks_env(backend, "webhook_isolation").await else {
        return;
    };
    let w = env
        .settings
        .sections
        .entry("webhooks".into())
        .or_insert(json!({}));
    w["per_endpoint_concurrency"] = json!(2);
    w["timeout_ms"] = json!(30_000);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, slow_key) = app.user("slow", 1000).await;
    let (_, fast_key) = app.user("fast", 1000).await;
    let hanging = Receiver::start().await;
    hanging
        .script
        .hang
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let healthy = Receiver::start().await;
    endpoint(&app, &slow_key, json!({ "url": hanging.url })).await;
    endpoint(&app, &fast_key, json!({ "url": healthy.url })).await;
    // The hanging tenant's deliveries first, many of them.
    for i in 0..30 {
        tasks::submit_id(
            &app,
            &slow_key,
            json!({ "kind": "copywriting", "prompt": format!("slow {i}") }),
        )
        .await;
    }
    wait_until(
        Duration::from_secs(10),
        "the hanging receiver holding its slots",
        || async { hanging.got().len() >= 2 },
    )
    .await;
    // Then the healthy tenant's: each arrives soon after its task ends.
    let mut lags = Vec::new();
    for i in 0..10 {
        let id = tasks::submit_id(
            &app,
            &fast_key,
            json!({ "kind": "copywriting", "prompt": format!("fast {i}") }),
        )
        .await;
        let t = tasks::wait_status(&app, &fast_key, &id, "SUCCESS").await;
        let ended = Instant::now();
        wait_until(
            Duration::from_secs(10),
            "the healthy tenant's delivery",
            || async {
                healthy
                    .got()
                    .iter()
                    .any(|r| r.json()["data"]["id"] == t["id"])
            },
        )
        .await;
        lags.push(ended.elapsed());
    }
    lags.sort();
    let worst = *lags.last().unwrap();
    eprintln!(
        "healthy tenant: delivery after its task ended p50 {:?}, max {worst:?}, while the other tenant's receiver hangs",
        lags[lags.len() / 2]
    );
    assert!(worst < Duration::from_secs(2), "{lags:?}");
    assert!(
        hanging.got().len() <= 2 + 2,
        "the hanging receiver holds at most its slots: {}",
        hanging.got().len()
    );
    done(env, app).await;
}
