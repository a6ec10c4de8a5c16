//! A task's success (and the material it left), failure and cancel each reach every
//! subscribed endpoint exactly once, verified with the reference library; an endpoint that did not subscribe to a
//! type does not get it; the body is the task's public view.

use std::time::Duration;

use serde_json::json;

use super::receiver::{Receiver, verify};
use super::{deliveries, endpoint, webhooks_env};
use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(final_states_reach_each_subscribed_endpoint_once_signed);

async fn final_states_reach_each_subscribed_endpoint_once_signed(backend: Backend) {
    let Some(env) = webhooks_env(backend, "webhook_events").await else {
        return;
    };
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("ada", 100).await;
    let everything = Receiver::start().await;
    let failures_only = Receiver::start().await;
    let (all_id, all_secret) = endpoint(
        &app,
        &key,
        json!({ "url": everything.url, "description": "all" }),
    )
    .await;
    let (failed_id, failed_secret) = endpoint(
        &app,
        &key,
        json!({ "url": failures_only.url, "event_types": ["task.failed"] }),
    )
    .await;
    // Another tenant's task reaches none of these.
    let (_, other_key) = app.user("bob", 100).await;
    tasks::submit_id(
        &app,
        &other_key,
        json!({ "kind": "copywriting", "prompt": "not yours" }),
    )
    .await;

    let ok = tasks::submit_id(
        &app,
        &key,
        json!({ "kind": "copywriting", "prompt": "spring tea" }),
    )
    .await;
    let bad = tasks::submit_id(
        &app,
        &key,
        json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "fail_permanent": true } } }),
    )
    .await;
    let slow = tasks::submit_id(
        &app,
        &key,
        json!({ "kind": "image", "prompt": "y", "params": { "simulate": { "step_ms": 4000 } } }),
    )
    .await;
    tasks::wait_status(&app, &key, &ok, "SUCCESS").await;
    tasks::wait_status(&app, &key, &bad, "FAILED").await;
    tasks::wait_status(&app, &key, &slow, "PROCESSING").await;
    let r = app
        .client
        .post(app.url(&format!("/v1/tasks/{slow}/cancel")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    let got = everything
        .wait_for_all(&app, 4, Duration::from_secs(20))
        .await;
    assert_eq!(got.len(), 4, "one each: {got:#?}");
    let mut seen: Vec<(String, String)> = got
        .iter()
        .map(|r| {
            let b = r.json();
            // A material names the task that made it.
            let task = match b["type"].as_str() {
                Some("material.created") => &b["data"]["task_id"],
                _ => &b["data"]["id"],
            };
            (
                b["type"].as_str().unwrap().to_owned(),
                task.as_str().unwrap().to_owned(),
            )
        })
        .collect();
    seen.sort();
    let mut want = vec![
        ("material.created".to_owned(), ok.clone()),
        ("task.canceled".to_owned(), slow.clone()),
        ("task.failed".to_owned(), bad.clone()),
        ("task.succeeded".to_owned(), ok.clone()),
    ];
    want.sort();
    assert_eq!(seen, want);
    // The body is the task's public view.
    let success = got
        .iter()
        .find(|r| r.json()["type"] == "task.succeeded")
        .unwrap()
        .json();
    assert_eq!(success["data"]["status"], "SUCCESS");
    assert!(success["data"]["result"]["text"].is_string(), "{success}");
    assert!(
        success["data"].get("user_id").is_none(),
        "no internals: {success}"
    );
    assert!(got.iter().all(|r| r.id().starts_with("evt_")));
    assert_eq!(verify(&all_secret, &got), ["ok"; 4]);
    assert!(
        verify(&failed_secret, &got).iter().all(|v| v != "ok"),
        "another endpoint's secret does not verify"
    );

    let only = failures_only
        .wait_for_all(&app, 1, Duration::from_secs(20))
        .await;
    assert_eq!(only.len(), 1, "{only:#?}");
    assert_eq!(only[0].json()["type"], "task.failed");
    assert_eq!(verify(&failed_secret, &only), ["ok"]);

    // The delivery log agrees: one delivery each, answered at the first attempt.
    let log = deliveries(&app, &key, &all_id).await;
    assert_eq!(log.len(), 4);
    assert!(
        log.iter()
            .all(|d| d["status"] == "SUCCEEDED" && d["attempts"] == 1 && d["last_status"] == 200),
        "{log:#?}"
    );
    assert_eq!(deliveries(&app, &key, &failed_id).await.len(), 1);
    done(env, app).await;
}
