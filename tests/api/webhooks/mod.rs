//! Outgoing webhooks against a receiver in the test, on every backend: final states
//! reach each subscribed endpoint exactly once, signed so the reference library verifies
//! them; failures are retried on the schedule with the same `webhook-id` and logged;
//! a hanging endpoint does not hold back another tenant's; URLs that are not public are
//! refused; a rotated secret signs beside the new one.

mod endpoints;
mod events;
mod isolation;
pub mod receiver;
mod retries;

use conveyor::broker::settings::QueueOverride;
use serde_json::Value;

use crate::helpers::*;

/// The delays between attempts, shortened: 300, 600, 900, 1200, 1500 ms.
pub const RETRY_MS: [u64; 5] = [300, 600, 900, 1200, 1500];

pub async fn webhooks_env(backend: Backend, test: &str) -> Option<TestEnv> {
    let mut env = TestEnv::new(backend, test).await?;
    for (i, ms) in RETRY_MS.iter().enumerate() {
        env.settings.queues.insert(
            format!("webhooks.retry.{}", i + 1),
            QueueOverride {
                delay_ms: Some(*ms),
                ..Default::default()
            },
        );
    }
    Some(env)
}

/// Creates an endpoint of `key`'s owner; its id and secret.
pub async fn endpoint(app: &TestApp, key: &str, body: Value) -> (String, String) {
    let r = app
        .client
        .post(app.url("/v1/webhooks/endpoints"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let v: Value = r.json().await.unwrap();
    assert_eq!(status, 201, "{v}");
    (
        v["id"].as_str().unwrap().to_owned(),
        v["secret"].as_str().unwrap().to_owned(),
    )
}

/// POST `path` as `key`'s owner: status and JSON answer.
pub async fn post(app: &TestApp, key: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = app.client.post(app.url(path)).bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// An endpoint's deliveries.
pub async fn deliveries(app: &TestApp, key: &str, endpoint: &str) -> Vec<Value> {
    let page = app
        .get_json(
            key,
            &format!("/v1/webhooks/endpoints/{endpoint}/deliveries?limit=100"),
        )
        .await;
    page["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{page}"))
        .clone()
}
