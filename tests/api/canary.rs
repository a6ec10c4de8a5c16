//! The canary domain on every backend: pings go round (outbox, relay, broker, consumer,
//! database), admins and `/metrics` see the round trips, a redelivered ping changes
//! nothing, a malformed one is dead-lettered with its reason.

use std::time::Duration;

use conveyor::broker::{Envelope, Target};
use conveyor::domains::canary::queues::CANARY_PING;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(
    pings_go_round_and_are_seen_by_admins_and_metrics,
    a_redelivered_ping_changes_nothing_and_a_malformed_one_is_dead_lettered,
);

async fn canary_app(backend: Backend, name: &str, interval_ms: u64) -> Option<(TestEnv, TestApp)> {
    let mut env = TestEnv::new(backend, name).await?;
    env.settings.sections.get_mut("canary").unwrap()["interval_ms"] = json!(interval_ms);
    let app = spawn_app(&env).await;
    app.start_consumers();
    Some((env, app))
}

async fn canary(app: &TestApp, key: &str, query: &str) -> (u16, Value) {
    let r = app
        .client
        .get(app.url(&format!("/v1/admin/canary{query}")))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

async fn pings_go_round_and_are_seen_by_admins_and_metrics(backend: Backend) {
    let Some((env, app)) = canary_app(backend, "canary_round", 100).await else {
        return;
    };
    let admin = app.admin().await;
    wait_until(Duration::from_secs(30), "three round trips", || async {
        let (_, view) = canary(&app, &admin, "?limit=100").await;
        view["pings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["received_at"].is_string())
            .count()
            >= 3
    })
    .await;
    let (status, view) = canary(&app, &admin, "?limit=5").await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["interval_ms"], 100);
    assert_eq!(view["overdue"], 0, "{view}");
    let last = &view["last_round_trip"];
    let latency = last["latency_ms"].as_i64().unwrap();
    assert!((0..10_000).contains(&latency), "{view}");
    assert!(view["pings"].as_array().unwrap().len() <= 5);
    // Newest first.
    let sent: Vec<&str> = view["pings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["sent_at"].as_str().unwrap())
        .collect();
    let mut sorted = sent.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(sent, sorted);

    let metrics = app.metrics(None).await;
    for name in [
        "conveyor_canary_latency_seconds",
        "conveyor_canary_last_success_age_seconds",
        "conveyor_canary_overdue 0",
        "conveyor_canary_round_trip_seconds",
    ] {
        assert!(metrics.contains(name), "{name} missing from /metrics");
    }

    // Admins only; a bad limit is a 400 that says why.
    let (_, key) = app.user("ada", 0).await;
    assert_eq!(canary(&app, &key, "").await.0, 403);
    let (status, body) = canary(&app, &admin, "?limit=0").await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["field"], "limit", "{body}");
    assert_eq!(canary(&app, &admin, "?nope=1").await.0, 400);
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

async fn a_redelivered_ping_changes_nothing_and_a_malformed_one_is_dead_lettered(backend: Backend) {
    // The job is off: this test sends its own ping.
    let Some((env, app)) = canary_app(backend, "canary_redelivery", 0).await else {
        return;
    };
    let ping = conveyor::domains::canary::store::send(&app.platform.db, 1 << 20)
        .await
        .unwrap();
    app.drain(&CANARY_PING).await;
    let row = || async {
        use sea_orm::EntityTrait as _;
        conveyor::domains::canary::entity::Entity::find_by_id(ping.ping_id.clone())
            .one(&app.platform.db)
            .await
            .unwrap()
            .unwrap()
    };
    let first = row().await;
    assert!(first.received_at.is_some(), "{first:?}");
    // The same ping again, under a new message id (past the runtime's dedupe): the row
    // is stamped once.
    let again = ping.envelope().with_id(uuid::Uuid::now_v7().to_string());
    app.platform
        .broker
        .publish(Target::Queue(&CANARY_PING), &again)
        .await
        .unwrap();
    app.drain(&CANARY_PING).await;
    assert_eq!(row().await, first, "stamped once");

    let bad = Envelope::new("canary.ping", json!({ "ping_id": 7 }));
    app.platform
        .broker
        .publish(Target::Queue(&CANARY_PING), &bad)
        .await
        .unwrap();
    wait_until(Duration::from_secs(20), "the dead letter", || async {
        !conveyor::dead_letters::list(&app.platform.db, Some("canary.ping"), 10)
            .await
            .unwrap()
            .is_empty()
    })
    .await;
    let dead = conveyor::dead_letters::list(&app.platform.db, Some("canary.ping"), 10)
        .await
        .unwrap();
    assert_eq!(dead[0].message_id, bad.id);
    assert_eq!(dead[0].reason, "permanent");
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// A new event type edits only its owner: the canary declares `canary.ping` and records
/// it (a ping sent on a tenant's behalf); a webhook endpoint may subscribe to it and gets
/// it, signed, with no edit to webhooks. A type no domain declares is still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_event_type_reaches_a_subscribed_webhook_endpoint() {
    use crate::webhooks::receiver::{Receiver, verify};
    use crate::webhooks::{endpoint, post, webhooks_env};
    let Some(mut env) = webhooks_env(Backend::Embedded, "canary_event").await else {
        return;
    };
    // The job is off: no pings but the test's.
    env.settings.sections.get_mut("canary").unwrap()["interval_ms"] = json!(0);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (user, key) = app.user("ada", 0).await;
    let rx = Receiver::start().await;
    let (_, secret) = endpoint(
        &app,
        &key,
        json!({ "url": rx.url, "event_types": ["canary.ping"] }),
    )
    .await;
    let (status, body) = post(
        &app,
        &key,
        "/v1/webhooks/endpoints",
        Some(json!({ "url": rx.url, "event_types": ["canary.pong"] })),
    )
    .await;
    assert_eq!(
        (status, &body["error"]["field"]),
        (422, &json!("event_types")),
        "{body}"
    );

    let ping = conveyor::domains::canary::store::send_for(
        &app.platform.db,
        &app.platform.events,
        &user.id,
        1 << 20,
    )
    .await
    .unwrap();
    app.platform.relay.notify();
    let got = rx.wait_for_all(&app, 1, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 1, "{got:#?}");
    let body = got[0].json();
    assert_eq!(body["type"], "canary.ping", "{body}");
    assert_eq!(body["data"]["ping_id"], ping.ping_id.as_str(), "{body}");
    assert_eq!(verify(&secret, &got), ["ok"]);
    // The canary's own pings have no tenant and reach nobody.
    conveyor::domains::canary::store::send(&app.platform.db, 1 << 20)
        .await
        .unwrap();
    app.drain(&CANARY_PING).await;
    assert_eq!(
        rx.wait_for_all(&app, 1, Duration::from_secs(5)).await.len(),
        1
    );
    done(env, app).await;
}

/// An interval too short to be a heartbeat is refused at start-up with the key.
#[test]
fn a_hammering_interval_is_refused() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let mut settings =
        conveyor::settings::Settings::load_from(&dir, "test", Vec::<(String, String)>::new())
            .unwrap();
    settings.sections.get_mut("canary").unwrap()["interval_ms"] = json!(50);
    let err = conveyor::domains::canary::settings::CanarySettings::from_settings(&settings)
        .unwrap_err()
        .to_string();
    assert!(err.contains("canary.interval_ms"), "{err}");
}
