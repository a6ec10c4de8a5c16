//! The HTTP skeleton: liveness, readiness, JSON errors, API keys.

use std::time::Duration;

use serde_json::Value;

use crate::helpers::tasks;
use crate::helpers::{Backend, TestEnv, spawn_app, spawn_app_with};
use crate::on_every_backend;

on_every_backend!(
    ready_when_every_dependency_answers,
    readiness_names_the_failed_dependency,
    api_keys_authenticate,
    metrics_show_waiting_work,
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

    let (status, body) = app.readyz(None).await;
    assert_eq!(status, 200);
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
    let r = tasks::submit(
        &app,
        &key,
        serde_json::json!({"kind": "copywriting", "prompt": "p"}),
    )
    .await;
    assert_eq!(r.status(), 202);
    let text = app.metrics(None).await;
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
    let mut env = env;
    env.settings.server.ops_token = "ops-secret-0123456789".into();
    let app = spawn_app(&env).await;
    app.platform.db.close_by_ref().await.unwrap();

    // The public sees which dependency failed, not why (hosts, error text).
    let (status, body) = app.readyz(None).await;
    assert_eq!(status, 503);
    assert_eq!(body["checks"]["database"]["error"], "unavailable", "{body}");
    // The operators' token sees why.
    let (status, body) = app.readyz(Some("ops-secret-0123456789")).await;
    assert_eq!(status, 503);
    let why = body["checks"]["database"]["error"].as_str().unwrap();
    assert_ne!(why, "unavailable", "{body}");
    // With a token set, /metrics needs it.
    let r = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = app
        .client
        .get(app.url("/metrics"))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
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

/// The value of one series in Prometheus text, if present.
fn series(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

async fn metrics_show_waiting_work(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "metrics_show_waiting_work").await else {
        return;
    };
    let app = spawn_app_with(&env, &[&crate::domain::IDLE]).await;
    let platform = &app.platform;
    // Two messages on a queue nothing consumes.
    for _ in 0..2 {
        let env = conveyor::broker::Envelope::new("idle.work", serde_json::json!({}));
        platform
            .broker
            .publish(
                conveyor::broker::Target::Queue(&crate::domain::IDLE_WORK),
                &env,
            )
            .await
            .unwrap();
    }
    // A dead letter waiting for an operator.
    let info = conveyor::broker::DeadLetterInfo {
        reason: conveyor::broker::DeadReason::Permanent,
        origin_queue: "x".into(),
        attempts: 1,
        last_error: "no".into(),
    };
    conveyor::dead_letters::record(&platform.db, "m1", "ai.short", "k", &info, &[], b"{}", 3)
        .await
        .unwrap();
    // An outbox row the relay cannot send (a target this build does not know), a
    // minute old: outbox lag an operator must see.
    use sea_orm::{ActiveValue::Set, EntityTrait as _};
    conveyor::outbox::entity::Entity::insert(conveyor::outbox::entity::ActiveModel {
        message_id: Set("stuck".into()),
        queue: Set("no.such.queue".into()),
        body: Set("{}".into()),
        created_at: Set(chrono::Utc::now() - chrono::Duration::minutes(1)),
        published_at: Set(None),
        attempts: Set(0),
        last_error: Set(None),
        ..Default::default()
    })
    .exec_without_returning(&platform.db)
    .await
    .unwrap();
    // Without consumers (RabbitMQ: they are separate processes) a task stays PENDING.
    let (_, key) = app.user("gauges", 100).await;
    if backend.is_real() {
        let r = tasks::submit(
            &app,
            &key,
            serde_json::json!({"kind": "image", "prompt": "p"}),
        )
        .await;
        assert_eq!(r.status(), 202);
    }

    // Metrics are process-wide and other tests' servers scrape too: retry until one
    // scrape of ours shows our figures.
    let mut last = String::new();
    let seen = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            last = app.metrics(None).await;
            let ok = series(
                &last,
                r#"conveyor_queue_messages{queue="idle.work",stage="ready"}"#,
            ) == Some(2.0)
                && series(
                    &last,
                    r#"conveyor_queue_messages{queue="idle.work",stage="dead"}"#,
                ) == Some(0.0)
                && series(&last, "conveyor_dead_letters_waiting") == Some(1.0)
                && series(&last, "conveyor_outbox_pending") == Some(1.0)
                && series(&last, "conveyor_outbox_oldest_pending_seconds")
                    .is_some_and(|s| s >= 59.0)
                && (!backend.is_real()
                    || series(&last, r#"conveyor_tasks_active{status="PENDING"}"#) == Some(1.0));
            if ok {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(
        seen.is_ok(),
        "gauges never showed the waiting work:\n{last}"
    );

    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_documented_pass_promtool_and_cover_the_alert_rules() {
    let env = TestEnv::new(Backend::Embedded, "alert_rules_metrics")
        .await
        .unwrap();
    let app = spawn_app(&env).await;
    // One task through the whole flow, so every counter has been touched.
    let (_, key) = app.user("alerts", 100).await;
    let id = tasks::submit_id(
        &app,
        &key,
        serde_json::json!({"kind": "copywriting", "prompt": "p"}),
    )
    .await;
    tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    let text = app.metrics(None).await;
    let rules = include_str!("../../deploy/prometheus/alerts.yml");
    let mut named = Vec::new();
    for part in rules.split("conveyor_").skip(1) {
        let name: String = part
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        named.push(format!("conveyor_{name}"));
    }
    assert!(named.len() >= 8, "{named:?}");
    passes_promtool_check_metrics(&text);
    dashboard_queries_exported_metrics(&text);
    for metric in named {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{metric}{{"))
                    || l.starts_with(&format!("{metric} "))),
            "the alert rules use {metric}, which /metrics does not export:\n{text}"
        );
    }
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// The seeds' distributions as histograms: attempts per message (a task retried once
/// lands in the `le="2"` bucket, not `le="1"`) and the time of each kind's steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_per_message_and_step_times_are_histograms() {
    let env = TestEnv::new(Backend::Embedded, "metrics_histograms")
        .await
        .unwrap();
    let app = spawn_app(&env).await;
    let (_, key) = app.user("histograms", 100).await;
    let id = tasks::submit_id(
        &app,
        &key,
        serde_json::json!({"kind": "copywriting", "prompt": "p",
            "params": {"simulate": {"fail_transient_attempts": 1}}}),
    )
    .await;
    let done = tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    assert_eq!(done["attempts"], 2, "{done}");
    let text = app.metrics(None).await;
    // The recorder is the process's: other tests' messages count too, so compare buckets.
    let bucket = |le: &str| -> f64 {
        let prefix = format!("conveyor_message_attempts_bucket{{queue=\"ai.short\",le=\"{le}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no {prefix} in:\n{text}"))
            .trim()
            .parse()
            .unwrap()
    };
    assert!(
        bucket("1") < bucket("2"),
        "a message that took two attempts: {} then {}",
        bucket("1"),
        bucket("2")
    );
    assert!(
        text.lines().any(|l| l.starts_with(
            "conveyor_task_step_seconds_bucket{kind=\"copywriting\",step=\"generate\",le="
        )),
        "{text}"
    );
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// Every conveyor metric on a live `/metrics` has its HELP text (from
/// docs/operations/metrics.md), and `promtool check metrics` (names, units, suffixes,
/// HELP) finds nothing.
fn passes_promtool_check_metrics(text: &str) {
    let mut undocumented: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("# TYPE conveyor_"))
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|name| !text.contains(&format!("# HELP {name} ")))
        .collect();
    undocumented.dedup();
    assert!(
        undocumented.is_empty(),
        "metrics with no row in docs/operations/metrics.md: {undocumented:?}"
    );
    use std::io::Write as _;
    let child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        assert!(
            !crate::helpers::required(),
            "promtool is missing and CONVEYOR_REQUIRE_SERVICES=1 (tools/promtool/install.sh)"
        );
        eprintln!("skipped promtool check metrics: promtool is not installed");
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics:\n{said}"
    );
}

/// `deploy/grafana/conveyor.json` is a dashboard (valid JSON, panels with queries) and
/// every metric its queries name is on `/metrics` (a histogram's `_bucket`/`_count`/`_sum`
/// series by the histogram's name).
fn dashboard_queries_exported_metrics(text: &str) {
    let dashboard: Value =
        serde_json::from_str(include_str!("../../deploy/grafana/conveyor.json")).unwrap();
    let exprs: Vec<&str> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .filter_map(|t| t["expr"].as_str())
        .collect();
    assert!(
        exprs.len() >= 20,
        "the dashboard's queries were read: {exprs:?}"
    );
    let exported = |name: &str| text.contains(&format!("# TYPE {name} "));
    let mut missing = Vec::new();
    for expr in exprs {
        for part in expr.split("conveyor_").skip(1) {
            let tail: String = part
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            let name = format!("conveyor_{tail}");
            let base = ["_bucket", "_count", "_sum"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(&name);
            if !exported(&name) && !exported(base) {
                missing.push(name);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the dashboard queries metrics /metrics does not export: {missing:?}"
    );
}
