//! AI tasks through the API: submit, read, wait for a status. A domain's helpers, as
//! free functions (the shared [`TestApp`] knows no domain).

use std::time::{Duration, Instant};

use super::TestApp;

/// `POST /v1/tasks` as the owner of `key`.
pub async fn submit(app: &TestApp, key: &str, body: serde_json::Value) -> reqwest::Response {
    app.client
        .post(app.url("/v1/tasks"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// Submits `body` as the owner of `key`; it must be accepted (202). Its task id.
pub async fn submit_id(app: &TestApp, key: &str, body: serde_json::Value) -> String {
    let r = submit(app, key, body.clone()).await;
    assert_eq!(r.status(), 202, "{body}");
    r.json::<serde_json::Value>().await.unwrap()["id"]
        .as_str()
        .expect("a task id")
        .to_owned()
}

/// `n` copywriting tasks prompted `<prefix> <i>`; their ids.
pub async fn copywriting_burst(app: &TestApp, key: &str, n: usize, prefix: &str) -> Vec<String> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let body = serde_json::json!({ "kind": "copywriting", "prompt": format!("{prefix} {i}") });
        ids.push(submit_id(app, key, body).await);
    }
    ids
}

/// `GET /v1/tasks/{id}`.
pub async fn task(app: &TestApp, key: &str, id: &str) -> serde_json::Value {
    app.get_json(key, &format!("/v1/tasks/{id}")).await
}

/// Polls the task until its status is `status`.
pub async fn wait_status(app: &TestApp, key: &str, id: &str, status: &str) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let t = task(app, key, id).await;
        if t["status"] == status {
            return t;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "task {id} never reached {status}: {t}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
