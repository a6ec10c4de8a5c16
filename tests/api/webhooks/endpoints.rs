//! Endpoints: bad input is refused with its field; URLs that are not public are refused
//! in production mode (loopback, private, link-local metadata, a name resolving to
//! loopback, http); another user's endpoint is 404; the count is capped; a rotated
//! secret signs beside the new one until the overlap ends; a disabled endpoint gets
//! nothing until enabled.

use std::time::Duration;

use serde_json::{Value, json};

use super::receiver::{Receiver, verify};
use super::{endpoint, post, webhooks_env};
use crate::helpers::*;

async fn send(
    app: &TestApp,
    method: reqwest::Method,
    key: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = app.client.request(method, app.url(path)).bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_that_are_not_public_are_refused_in_production_mode() {
    let Some(mut env) = webhooks_env(Backend::Embedded, "webhook_ssrf").await else {
        return;
    };
    let w = env.settings.sections.get_mut("webhooks").unwrap();
    w["allow_http"] = json!(false);
    w["allow_private_targets"] = json!(false);
    let app = spawn_app(&env).await;
    let (_, key) = app.user("ada", 10).await;
    for url in [
        "https://127.0.0.1/hook",
        "https://10.0.0.5/hook",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::1]:8443/hook",
        "https://localhost/hook",
        "http://example.com/hook",
        "https://user:secret@example.com/hook",
        "ftp://example.com/hook",
    ] {
        let (status, body) = post(
            &app,
            &key,
            "/v1/webhooks/endpoints",
            Some(json!({ "url": url })),
        )
        .await;
        assert_eq!(status, 422, "{url}: {body}");
        assert_eq!(body["error"]["field"], "url", "{url}: {body}");
    }
    done(env, app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_are_validated_owned_capped_rotated_and_disabled() {
    let Some(mut env) = webhooks_env(Backend::Embedded, "webhook_endpoints").await else {
        return;
    };
    let w = env.settings.sections.get_mut("webhooks").unwrap();
    w["max_endpoints"] = json!(2);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("ada", 100).await;
    let (_, bob) = app.user("bob", 100).await;
    let rx = Receiver::start().await;
    for (body, status, field) in [
        (json!({}), 422, "url"),
        (
            json!({ "url": rx.url, "event_types": ["task.exploded"] }),
            422,
            "event_types",
        ),
        (
            json!({ "url": rx.url, "description": "x".repeat(501) }),
            422,
            "description",
        ),
        (json!({ "url": "not a url" }), 422, "url"),
        (json!({ "url": rx.url, "owner": "bob" }), 422, "owner"),
    ] {
        let (got, answer) = post(&app, &key, "/v1/webhooks/endpoints", Some(body.clone())).await;
        assert_eq!(got, status, "{body}: {answer}");
        if !field.is_empty() {
            assert_eq!(answer["error"]["field"], field, "{answer}");
        }
    }
    let (id, old_secret) = endpoint(
        &app,
        &key,
        json!({ "url": rx.url, "event_types": ["task.succeeded"] }),
    )
    .await;
    let listed = app.get_json(&key, "/v1/webhooks/endpoints").await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    assert!(
        listed["items"][0].get("secret").is_none(),
        "the secret is shown once: {listed}"
    );
    let path = format!("/v1/webhooks/endpoints/{id}");
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let (status, _) = send(&app, method.clone(), &bob, &path, None).await;
        assert_eq!(status, 404, "{method} by another user");
    }
    let (status, _) = post(&app, &bob, &format!("{path}/test"), None).await;
    assert_eq!(status, 404);
    let elsewhere = Receiver::start().await;
    endpoint(&app, &key, json!({ "url": elsewhere.url })).await;
    let (status, body) = post(
        &app,
        &key,
        "/v1/webhooks/endpoints",
        Some(json!({ "url": rx.url })),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("too_many_endpoints")),
        "{body}"
    );

    // A rotation: the new secret is shown once; both sign during the overlap.
    let (status, rotated) = post(&app, &key, &format!("{path}/rotate-secret"), None).await;
    assert_eq!(status, 200, "{rotated}");
    let new_secret = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(new_secret, old_secret);
    assert!(rotated["previous_secret_until"].is_string(), "{rotated}");
    let (status, _) = post(&app, &key, &format!("{path}/test"), None).await;
    assert_eq!(status, 202);
    let got = rx.wait_for_all(&app, 1, Duration::from_secs(10)).await;
    assert_eq!(
        got[0].headers["webhook-signature"].split(' ').count(),
        2,
        "two signatures"
    );
    assert_eq!(verify(&new_secret, &got), ["ok"]);
    assert_eq!(
        verify(&old_secret, &got),
        ["ok"],
        "the old secret still verifies during the overlap"
    );

    // Disabled by its owner: nothing is sent; a test is refused; enabled again, it is.
    let (status, patched) = send(
        &app,
        reqwest::Method::PATCH,
        &key,
        &path,
        Some(json!({ "enabled": false })),
    )
    .await;
    assert_eq!(
        (status, patched["enabled"].as_bool()),
        (200, Some(false)),
        "{patched}"
    );
    let t = tasks::submit_id(
        &app,
        &key,
        json!({ "kind": "copywriting", "prompt": "quiet" }),
    )
    .await;
    tasks::wait_status(&app, &key, &t, "SUCCESS").await;
    // Read once the other endpoint (every type) got the task's success and every
    // delivery on its way was handled.
    wait_until(
        Duration::from_secs(10),
        "the other endpoint's delivery",
        || async { elsewhere.got().iter().any(|r| r.json()["data"]["id"] == t) },
    )
    .await;
    app.drain_key("webhooks.deliver").await;
    assert_eq!(rx.got().len(), 1, "nothing for a disabled endpoint");
    let (status, body) = post(&app, &key, &format!("{path}/test"), None).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("endpoint_disabled"))
    );
    let (status, _) = send(
        &app,
        reqwest::Method::PATCH,
        &key,
        &path,
        Some(json!({ "enabled": true })),
    )
    .await;
    assert_eq!(status, 200);
    let t = tasks::submit_id(
        &app,
        &key,
        json!({ "kind": "copywriting", "prompt": "loud" }),
    )
    .await;
    tasks::wait_status(&app, &key, &t, "SUCCESS").await;
    let got = rx.wait_for_all(&app, 2, Duration::from_secs(10)).await;
    assert_eq!(got[1].json()["data"]["id"], t);
    let (status, _) = send(&app, reqwest::Method::DELETE, &key, &path, None).await;
    assert_eq!(status, 204);
    let (status, _) = send(&app, reqwest::Method::GET, &key, &path, None).await;
    assert_eq!(status, 404);
    done(env, app).await;
}

/// An endpoint that fails for `disable_after_secs` is disabled, with a notice to its
/// tenant's other endpoints; its owner enables it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_failing_for_long_is_disabled_with_a_notice() {
    let Some(mut env) = webhooks_env(Backend::Embedded, "webhook_disable").await else {
        return;
    };
    env.settings.sections.get_mut("webhooks").unwrap()["disable_after_secs"] = json!(1);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("ada", 100).await;
    let (down, up) = (Receiver::start().await, Receiver::start().await);
    down.script
        .fail_first
        .store(1_000, std::sync::atomic::Ordering::SeqCst);
    let (bad, _) = endpoint(&app, &key, json!({ "url": down.url })).await;
    let (_, secret) = endpoint(
        &app,
        &key,
        json!({ "url": up.url, "event_types": ["webhook.endpoint_disabled"] }),
    )
    .await;
    let (status, _) = post(
        &app,
        &key,
        &format!("/v1/webhooks/endpoints/{bad}/test"),
        None,
    )
    .await;
    assert_eq!(status, 202);
    let notice = up.wait_for(1, Duration::from_secs(15)).await;
    // What the disabled endpoint got until its notice went out.
    let attempts = down.got().len();
    let body = notice[0].json();
    assert_eq!(body["type"], "webhook.endpoint_disabled", "{body}");
    assert_eq!(body["data"]["endpoint_id"], bad.as_str());
    assert_eq!(verify(&secret, &notice), ["ok"]);
    let shown = app
        .get_json(&key, &format!("/v1/webhooks/endpoints/{bad}"))
        .await;
    assert_eq!(shown["enabled"], false, "{shown}");
    assert!(
        shown["disabled_reason"]
            .as_str()
            .is_some_and(|r| r.contains("disabled")),
        "{shown}"
    );
    // Read once every delivery on its way (its retries' delays included) was handled.
    app.drain_key("webhooks.deliver").await;
    assert_eq!(
        down.got().len(),
        attempts,
        "nothing more is sent to a disabled endpoint"
    );
    assert_eq!(up.got().len(), 1, "one notice");
    let (status, enabled) = send(
        &app,
        reqwest::Method::PATCH,
        &key,
        &format!("/v1/webhooks/endpoints/{bad}"),
        Some(json!({ "enabled": true })),
    )
    .await;
    assert_eq!(
        (status, enabled["disabled_reason"].clone()),
        (200, Value::Null),
        "{enabled}"
    );
    done(env, app).await;
}

/// Deliveries asked for by hand (test events and manual retries) are a rate per tenant:
/// beyond `webhook_sends_per_min`, 429 `rate_limited` with Retry-After, for both routes
/// together; another tenant is not held back. A retry that cannot send (a delivery still
/// being attempted: 409 `delivery_pending`; none: 404) spends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_events_and_manual_retries_are_rate_limited_per_tenant() {
    let Some(mut env) = webhooks_env(Backend::Embedded, "webhook_sends_limited").await else {
        return;
    };
    env.settings
        .limits
        .insert("webhook_sends_per_min".into(), 3);
    let app = spawn_app(&env).await;
    let rx = Receiver::start().await;
    // Its deliveries stay PENDING: the receiver holds every request.
    let stuck = Receiver::start().await;
    stuck
        .script
        .hang
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let (_, key) = app.user("ada", 100).await;
    let (id, _) = endpoint(&app, &key, json!({ "url": rx.url })).await;
    let (held, _) = endpoint(&app, &key, json!({ "url": stuck.url })).await;
    let test = format!("/v1/webhooks/endpoints/{id}/test");
    // 1 of 3: a delivery that finishes.
    let (status, body) = post(&app, &key, &test, None).await;
    assert_eq!(status, 202, "{body}");
    let delivery = body["delivery_id"].as_str().unwrap().to_owned();
    let shown = format!("/v1/webhooks/endpoints/{id}/deliveries/{delivery}");
    let start = std::time::Instant::now();
    while app.get_json(&key, &shown).await["status"] != "SUCCEEDED" {
        assert!(start.elapsed() < Duration::from_secs(30), "never delivered");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // 2 of 3: one that is still being attempted; retrying it spends nothing.
    let (status, body) = post(
        &app,
        &key,
        &format!("/v1/webhooks/endpoints/{held}/test"),
        None,
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let pending = body["delivery_id"].as_str().unwrap().to_owned();
    for _ in 0..3 {
        let retry = format!("/v1/webhooks/endpoints/{held}/deliveries/{pending}/retry");
        let (status, body) = post(&app, &key, &retry, None).await;
        assert_eq!(status, 409, "{body}");
        assert_eq!(body["error"]["code"], "delivery_pending", "{body}");
    }
    let unknown = format!(
        "/v1/webhooks/endpoints/{id}/deliveries/{}/retry",
        uuid::Uuid::new_v4()
    );
    let (status, body) = post(&app, &key, &unknown, None).await;
    assert_eq!(status, 404, "{body}");
    // 3 of 3, then the budget is spent.
    let (status, body) = post(&app, &key, &test, None).await;
    assert_eq!(status, 202, "{body}");
    let r = app
        .client
        .post(app.url(&test))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert!(r.headers().contains_key("retry-after"), "{:?}", r.headers());
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited", "{body}");
    // A manual retry that would send counts against the same budget.
    let (status, body) = post(&app, &key, &format!("{shown}/retry"), None).await;
    assert_eq!(status, 429, "{body}");
    // Another tenant has a budget of its own.
    let (_, other) = app.user("bob", 100).await;
    let (theirs, _) = endpoint(&app, &other, json!({ "url": rx.url })).await;
    let (status, body) = post(
        &app,
        &other,
        &format!("/v1/webhooks/endpoints/{theirs}/test"),
        None,
    )
    .await;
    assert_eq!(status, 202, "{body}");
    done(env, app).await;
}
