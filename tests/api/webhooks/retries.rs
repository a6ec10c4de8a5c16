//! A receiver that answers 500 three times gets the event on the fourth attempt, at the
//! scheduled delays, always with the same `webhook-id`; every attempt is in the log. A
//! delivery retried by hand goes again (a second click changes nothing); a test event
//! reaches an endpoint whatever it subscribed to.

use std::time::Duration;

use serde_json::json;

use super::receiver::{Receiver, verify};
use super::{RETRY_MS, deliveries, endpoint, post, webhooks_env};
use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(a_failing_receiver_gets_the_event_on_schedule_with_one_id);

async fn a_failing_receiver_gets_the_event_on_schedule_with_one_id(backend: Backend) {
    let Some(env) = webhooks_env(backend, "webhook_retries").await else {
        return;
    };
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("ada", 100).await;
    let rx = Receiver::start().await;
    rx.script
        .fail_first
        .store(3, std::sync::atomic::Ordering::SeqCst);
    let (id, secret) = endpoint(
        &app,
        &key,
        json!({ "url": rx.url, "event_types": ["task.succeeded"] }),
    )
    .await;
    let task = tasks::submit_id(&app, &key, json!({ "kind": "copywriting", "prompt": "p" })).await;
    tasks::wait_status(&app, &key, &task, "SUCCESS").await;
    let got = rx.wait_for_all(&app, 4, Duration::from_secs(30)).await;
    assert_eq!(
        got.len(),
        4,
        "three failures and the success, nothing after: {got:#?}"
    );
    assert!(
        got.iter().all(|r| r.id() == got[0].id()),
        "one webhook-id throughout"
    );
    assert!(got.iter().all(|r| r.body == got[0].body), "the same body");
    assert_eq!(verify(&secret, &got), ["ok"; 4]);
    // Each retry waited at least its delay (and not wildly more).
    for (i, pair) in got.windows(2).enumerate() {
        let gap = pair[1].at - pair[0].at;
        let want = Duration::from_millis(RETRY_MS[i]);
        assert!(
            gap >= want.mul_f64(0.9) && gap < want + Duration::from_secs(3),
            "retry {} after {gap:?}, scheduled {want:?}",
            i + 1
        );
    }
    // The log: one delivery, four attempts (500, 500, 500, 200).
    let log = deliveries(&app, &key, &id).await;
    assert_eq!(log.len(), 1, "{log:#?}");
    assert_eq!(
        (log[0]["status"].as_str(), log[0]["attempts"].as_i64()),
        (Some("SUCCEEDED"), Some(4))
    );
    let path = format!(
        "/v1/webhooks/endpoints/{id}/deliveries/{}",
        log[0]["id"].as_str().unwrap()
    );
    let one = app.get_json(&key, &path).await;
    let codes: Vec<i64> = one["log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].as_i64().unwrap())
        .collect();
    assert_eq!(codes, [500, 500, 500, 200], "{one}");
    assert_eq!(one["log"][0]["response"], "try again later");
    assert!(
        one["log"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["latency_ms"].as_i64().unwrap() >= 0)
    );

    // By hand: sent again with the same id; a second click while it is pending is 409.
    let (status, body) = post(&app, &key, &format!("{path}/retry"), None).await;
    assert_eq!(status, 202, "{body}");
    let (again, body) = post(&app, &key, &format!("{path}/retry"), None).await;
    assert!(again == 409 || again == 202, "{again} {body}");
    let got = rx.wait_for_all(&app, 5, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 5, "one more delivery, not two: {got:#?}");
    assert_eq!(got[4].id(), got[0].id());

    // A test event, whatever the endpoint subscribed to.
    let (status, sent) = post(
        &app,
        &key,
        &format!("/v1/webhooks/endpoints/{id}/test"),
        None,
    )
    .await;
    assert_eq!(status, 202, "{sent}");
    let got = rx.wait_for_all(&app, 6, Duration::from_secs(10)).await;
    assert_eq!(got[5].json()["type"], "webhook.test");
    assert_eq!(got[5].id(), sent["event_id"]);
    assert_eq!(verify(&secret, &got[5..]), ["ok"]);
    done(env, app).await;
}

/// An endpoint that keeps failing shows on /ops, with its tenant's deliveries still being
/// attempted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_endpoint_and_its_backlog_show_on_ops() {
    let Some(mut env) = webhooks_env(Backend::Embedded, "webhook_ops").await else {
        return;
    };
    env.settings.ops.sample_interval_ms = 200;
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (ada, key) = app.user("ada", 100).await;
    let admin = app.admin().await;
    let rx = Receiver::start().await;
    rx.script
        .fail_first
        .store(1_000, std::sync::atomic::Ordering::SeqCst);
    let (id, _) = endpoint(&app, &key, json!({ "url": rx.url })).await;
    let (status, _) = post(
        &app,
        &key,
        &format!("/v1/webhooks/endpoints/{id}/test"),
        None,
    )
    .await;
    assert_eq!(status, 202);
    let table = |title: &'static str| {
        let (app, admin) = (&app, admin.clone());
        async move {
            // Before the board's first sample it answers 503 (no panels yet).
            let board = app.get_json(&admin, "/v1/admin/ops").await;
            board["panels"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .filter(|p| p["source"] == "webhooks")
                .flat_map(|p| p["tables"].as_array().unwrap().clone())
                .find(|t| t["title"] == title)
                .unwrap_or_default()
        }
    };
    wait_until(
        Duration::from_secs(15),
        "the failing endpoint on /ops",
        || async {
            table("Failing endpoints").await["rows"]
                .as_array()
                .is_some_and(|rows| rows.iter().any(|r| r[1] == id.as_str()))
        },
    )
    .await;
    let backlog = table("Deliveries being attempted, by tenant").await;
    let row = backlog["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == ada.id.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("{backlog}"));
    assert_eq!(row[1], 1, "{backlog}");
    let shown = app
        .get_json(&key, &format!("/v1/webhooks/endpoints/{id}"))
        .await;
    assert!(shown["failing_since"].is_string(), "{shown}");
    done(env, app).await;
}

/// The delivery log's retention: ended deliveries go with their attempts and events; one
/// still being attempted stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_delivery_log_is_trimmed_but_pending_deliveries_stay() {
    let Some(env) = webhooks_env(Backend::Embedded, "webhook_trim").await else {
        return;
    };
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("ada", 100).await;
    let (ok, down) = (Receiver::start().await, Receiver::start().await);
    down.script
        .fail_first
        .store(1_000, std::sync::atomic::Ordering::SeqCst);
    let (good, _) = endpoint(&app, &key, json!({ "url": ok.url })).await;
    let (bad, _) = endpoint(&app, &key, json!({ "url": down.url })).await;
    for e in [&good, &bad] {
        let (status, _) = post(
            &app,
            &key,
            &format!("/v1/webhooks/endpoints/{e}/test"),
            None,
        )
        .await;
        assert_eq!(status, 202);
    }
    ok.wait_for(1, Duration::from_secs(10)).await;
    down.wait_for(1, Duration::from_secs(10)).await;
    // The answer is recorded once the receiver's 200 came back.
    wait_until(Duration::from_secs(10), "the delivery recorded", || async {
        deliveries(&app, &key, &good).await[0]["status"] == "SUCCEEDED"
    })
    .await;
    let delivered = deliveries(&app, &key, &good).await;
    let pending = deliveries(&app, &key, &bad).await;
    assert_eq!(
        (
            delivered[0]["status"].as_str(),
            pending[0]["status"].as_str()
        ),
        (Some("SUCCEEDED"), Some("PENDING"))
    );
    let trim = conveyor::domains::webhooks::ops::RETENTION[0].trim;
    let gone = trim(
        &app.platform.db,
        chrono::Utc::now() + chrono::Duration::days(1),
    )
    .await
    .unwrap();
    assert_eq!(gone, 1, "the ended delivery");
    assert!(deliveries(&app, &key, &good).await.is_empty());
    let path = format!(
        "/v1/webhooks/endpoints/{good}/deliveries/{}",
        delivered[0]["id"].as_str().unwrap()
    );
    let r = app
        .client
        .get(app.url(&path))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let still = deliveries(&app, &key, &bad).await;
    assert_eq!(
        still.len(),
        1,
        "a delivery still being attempted stays: {still:?}"
    );
    done(env, app).await;
}
