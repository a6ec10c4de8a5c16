//! The HTTP skeleton: liveness, readiness, JSON errors, API keys.

use std::time::Duration;

use serde_json::Value;

use crate::helpers::{Backend, TestEnv, spawn_app};
use crate::on_every_backend;

on_every_backend!(
    ready_when_every_dependency_answers,
    readiness_names_the_failed_dependency,
    api_keys_authenticate
);

async fn ready_when_every_dependency_answers(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "ready_when_every_dependency_answers").await else {
        return;
    };
    let app = spawn_app(&env).await;

    let r = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.headers().contains_key("x-request-id"),
        "every answer carries a request id"
    );

    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    for dep in ["database", "broker", "dedupe"] {
        assert_eq!(body["checks"][dep], "ok", "{dep} in {body}");
    }

    let r = app
        .client
        .get(app.url("/no/such/route"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found");

    // Recorded before the first scrape, so the recorder exists from startup.
    let (_, key) = app.user("metrics", 100).await;
    let r = app
        .submit(
            &key,
            serde_json::json!({"kind": "copywriting", "prompt": "p"}),
        )
        .await;
    assert_eq!(r.status(), 202);
    let r = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    for metric in [
        "conveyor_submit_batch_size",
        "conveyor_submit_commit_seconds",
    ] {
        assert!(
            text.contains(metric),
            "{metric} missing from /metrics:\n{text}"
        );
    }

    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

async fn readiness_names_the_failed_dependency(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "readiness_names_the_failed_dependency").await else {
        return;
    };
    let app = spawn_app(&env).await;
    app.platform.db.close_by_ref().await.unwrap();

    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 503);
    let body: Value = r.json().await.unwrap();
    assert!(body["checks"]["database"]["error"].is_string(), "{body}");
    assert_eq!(body["checks"]["broker"], "ok");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("database")
    );

    app.shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), app.server).await;
    env.cleanup(Some(&app.platform)).await;
}

async fn api_keys_authenticate(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "api_keys_authenticate").await else {
        return;
    };
    let app = spawn_app(&env).await;
    let (user, key) = conveyor::users::create(&app.platform.db, "ada", 500, false)
        .await
        .unwrap();
    assert!(key.starts_with("cvk_"));

    let r = app
        .client
        .get(app.url("/v1/me"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let me: Value = r.json().await.unwrap();
    assert_eq!(me["id"], user.id.as_str());
    assert_eq!(me["credits"], 500);

    for auth in [None, Some("cvk_0000"), Some("not-a-key")] {
        let mut req = app.client.get(app.url("/v1/me"));
        if let Some(k) = auth {
            req = req.bearer_auth(k);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 401);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "unauthorized");
    }

    // The key is stored only as its hash.
    use sea_orm::EntityTrait;
    let keys = conveyor::users::entity::api_key::Entity::find()
        .all(&app.platform.db)
        .await
        .unwrap();
    assert_eq!(keys.len(), 1);
    assert_ne!(keys[0].key_hash, key);
    assert_eq!(keys[0].key_hash, conveyor::users::hash_key(&key));

    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}
