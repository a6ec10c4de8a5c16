//! The operations console's server side: the board (queues, rates reported by the worker
//! processes, the AI panel, history), its stream, the page, and alerts that fire once to
//! a webhook and resolve when their condition clears.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::routing::post;
use serde_json::{Value, json};

use crate::helpers::tasks;
use crate::helpers::{Backend, TestApp, TestEnv, done, spawn_app, wait_until};

crate::on_every_backend!(the_board_shows_queues_rates_and_panels);

async fn board(app: &TestApp, key: &str) -> Value {
    let r = app
        .client
        .get(app.url("/v1/admin/ops"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    if r.status() == 503 {
        return Value::Null; // no sample yet
    }
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

fn queue<'a>(snapshot: &'a Value, key: &str) -> &'a Value {
    snapshot["queues"]
        .as_array()
        .and_then(|qs| qs.iter().find(|q| q["queue"] == key))
        .unwrap_or(&Value::Null)
}

async fn the_board_shows_queues_rates_and_panels(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "ops_board").await else {
        return;
    };
    env.settings.ops.sample_interval_ms = 200;
    let app = spawn_app(&env).await;
    app.start_consumers();
    let admin = app.admin().await;
    let (_, user) = app.user("alice", 100).await;

    // Admins only.
    let r = app
        .client
        .get(app.url("/v1/admin/ops"))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);

    // Concurrency changes: validated, stored, audited (followed: tests/api/concurrency.rs).
    let put = |path: &str, body: Value| {
        app.client
            .put(app.url(path))
            .bearer_auth(&admin)
            .json(&body)
            .send()
    };
    let r = put(
        "/v1/admin/queues/ai.long/concurrency",
        json!({ "prefetch": 8 }),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        conveyor::consumer::concurrency::of(&app.platform.db, "ai.long")
            .await
            .unwrap(),
        Some(8)
    );
    let r = put(
        "/v1/admin/queues/ai.long/concurrency",
        json!({ "prefetch": 0 }),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["field"],
        "prefetch"
    );
    let r = put(
        "/v1/admin/queues/nope/concurrency",
        json!({ "prefetch": 8 }),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 404);

    let ids = tasks::copywriting_burst(&app, &user, 20, "board").await;
    for id in &ids {
        tasks::wait_status(&app, &user, id, "SUCCESS").await;
    }
    // The consumers' reports arrive: ai.short has a consumer with its prefetch, and the
    // history holds the publishing and consuming of the burst.
    let start = std::time::Instant::now();
    let last = loop {
        let s = board(&app, &admin).await;
        let q = queue(&s, "ai.short");
        let series = s["series"]["ai.short"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let consumed: f64 = series
            .iter()
            .map(|p| p["consumed_per_sec"].as_f64().unwrap_or(0.0))
            .sum();
        let published: f64 = series
            .iter()
            .map(|p| p["published_per_sec"].as_f64().unwrap_or(0.0))
            .sum();
        if q["consumers"].as_u64() >= Some(1) && consumed > 0.0 && published > 0.0 {
            let prefetch = conveyor::domains::ai_tasks::queues::AI_SHORT.default_prefetch;
            assert_eq!(q["concurrency"], prefetch, "{q}");
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the board never showed ai.short consumed: {s}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Every queue of the topology has a row; the AI panel lists the failures table.
    for key in [
        "ai.short",
        "ai.long",
        "ai.media.extract",
        "ai.check",
        "search.sync",
    ] {
        assert!(queue(&last, key).is_object(), "{key} missing: {last}");
    }
    let panel = last["panels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["source"] == "ai_tasks")
        .expect("the AI panel")
        .clone();
    let titles: Vec<&str> = panel["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["title"].as_str().unwrap())
        .collect();
    assert!(titles.contains(&"Recent failures"), "{titles:?}");
    assert_eq!(last["dead_letters"]["waiting"], 0);

    // The stream pushes snapshots.
    let r = app
        .client
        .get(app.url("/v1/admin/ops/stream"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut r = r;
    let mut text = String::new();
    let got = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(chunk) = r.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if text.matches("event: snapshot").count() >= 2 {
                return true;
            }
        }
        false
    })
    .await;
    assert!(matches!(got, Ok(true)), "two snapshot events: {text:.300}");

    // The page is served with its own CSP.
    let r = app.client.get(app.url("/ops")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    assert!(r.text().await.unwrap().contains("conveyor ops"));
    done(env, app).await;
}

/// A webhook receiver that keeps what it was sent.
async fn receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
    let got: Arc<Mutex<Vec<Value>>> = Arc::default();
    let keep = got.clone();
    let router = axum::Router::new().route(
        "/hook",
        post(move |Json(v): Json<Value>| {
            let keep = keep.clone();
            async move {
                keep.lock().unwrap().push(v);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (format!("http://{addr}/hook"), got)
}

fn notices(got: &Mutex<Vec<Value>>, rule: &str, status: &str) -> usize {
    got.lock()
        .unwrap()
        .iter()
        .filter(|n| n["rule"] == rule && n["queue"] == "ai.short" && n["status"] == status)
        .count()
}

/// With RabbitMQ the API runs no consumer: a burst waits in ai.short until the test
/// starts them, so the backlog and the oldest-message alerts fire, then resolve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_fire_once_to_a_webhook_and_resolve_when_the_backlog_drains() {
    let Some(mut env) = TestEnv::new(Backend::RabbitPostgres, "ops_alerts").await else {
        return;
    };
    let (url, got) = receiver().await;
    env.settings.ops.sample_interval_ms = 200;
    env.settings.ops.link = "http://ops.example/ops".into();
    env.settings.ops.receivers = vec![conveyor::ops::settings::AlertReceiver {
        url,
        format: conveyor::ops::settings::AlertFormat::Generic,
    }];
    let a = &mut env.settings.ops.alerts;
    a.backlog_factor = 2.0;
    a.backlog_for_secs = 0;
    a.oldest_secs = 1.0;
    a.oldest_for_secs = 0;
    let app = spawn_app(&env).await;
    let admin = app.admin().await;
    let (_, user) = app.user("alice", 100).await;
    let ids = tasks::copywriting_burst(&app, &user, 6, "alert").await;
    wait_until(Duration::from_secs(20), "both alerts notified", || {
        let got = got.clone();
        async move {
            notices(&got, "backlog", "firing") == 1
                && notices(&got, "oldest_message", "firing") == 1
        }
    })
    .await;
    let alerts = app.get_json(&admin, "/v1/admin/alerts").await;
    let active: Vec<&str> = alerts["active"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["rule"].as_str().unwrap())
        .collect();
    assert!(
        active.contains(&"backlog") && active.contains(&"oldest_message"),
        "{alerts}"
    );
    {
        let sent = got.lock().unwrap();
        let fired = sent.iter().find(|n| n["rule"] == "backlog").unwrap();
        assert_eq!(fired["link"], "http://ops.example/ops");
        assert!(
            fired["value"].as_f64().unwrap() > fired["threshold"].as_f64().unwrap(),
            "{fired}"
        );
    }
    // Still firing three samples later: notified once, not once per sample.
    let seen = Mutex::new(std::collections::HashSet::new());
    wait_until(Duration::from_secs(20), "three more samples", || async {
        let at = app.get_json(&admin, "/v1/admin/ops").await["at"].to_string();
        let mut seen = seen.lock().unwrap();
        seen.insert(at);
        seen.len() > 3
    })
    .await;
    assert_eq!(notices(&got, "backlog", "firing"), 1);

    app.start_consumers();
    for id in &ids {
        tasks::wait_status(&app, &user, id, "SUCCESS").await;
    }
    wait_until(Duration::from_secs(20), "both alerts resolved", || {
        let got = got.clone();
        async move {
            notices(&got, "backlog", "resolved") == 1
                && notices(&got, "oldest_message", "resolved") == 1
        }
    })
    .await;
    let alerts = app.get_json(&admin, "/v1/admin/alerts").await;
    assert_eq!(alerts["active"], json!([]), "{alerts}");
    let history = alerts["history"].as_array().unwrap();
    assert!(history.iter().all(|a| a["state"] == "resolved"), "{alerts}");
    // Resolved notices name the same episode as their firing one.
    {
        let sent = got.lock().unwrap();
        for rule in ["backlog", "oldest_message"] {
            let ids: Vec<&Value> = sent
                .iter()
                .filter(|n| n["rule"] == rule)
                .map(|n| &n["id"])
                .collect();
            assert_eq!(ids.len(), 2, "{rule}: {sent:?}");
            assert_eq!(ids[0], ids[1], "{rule}");
        }
    }
    done(env, app).await;
}
