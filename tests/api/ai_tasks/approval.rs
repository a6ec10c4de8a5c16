//! Steps that wait for a person: a video-analysis pipeline whose `summarize` step needs
//! an approval waits after `transcribe` (WAITING, no worker held: more tasks wait than
//! the pipeline queue's prefetch), shows what is to be approved and its one-time link,
//! runs on after an approval, and ends CANCELED with the cancel policy's refund (the
//! steps not run come back) after a rejection or the timeout. Another tenant cannot
//! decide it; bad decisions are 422; a link works once.

use serde_json::{Value, json};

use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(
    a_gated_step_waits_with_no_worker_and_runs_once_approved,
    a_rejection_or_the_timeout_ends_it_with_the_policy_refund,
);

/// video_analysis costs 10 over 4 steps.
const COST: i64 = 10;

async fn gated_app(backend: Backend, test: &str, timeout_secs: u64) -> Option<(TestEnv, TestApp)> {
    let mut env = TestEnv::new(backend, test).await?;
    let ai = env.settings.sections.get_mut("ai").unwrap();
    ai["kinds"]["video_analysis"]["approval_before"] = json!(["summarize"]);
    ai["kinds"]["video_analysis"]["approval_timeout_secs"] = json!(timeout_secs);
    let app = spawn_app(&env).await;
    app.start_consumers();
    Some((env, app))
}

async fn decide(app: &TestApp, key: Option<&str>, path: &str, body: Value) -> (u16, Value) {
    let mut req = app.client.post(app.url(path)).json(&body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn submit(app: &TestApp, key: &str, prompt: &str) -> String {
    let upload = videos::analysable(app, key).await;
    tasks::submit_id(
        app,
        key,
        json!({"kind": "video_analysis", "prompt": prompt, "params": {"upload_id": upload}}),
    )
    .await
}

async fn a_gated_step_waits_with_no_worker_and_runs_once_approved(backend: Backend) {
    let Some((env, app)) = gated_app(backend, "approval_run", 3600).await else {
        return;
    };
    let (_, key) = app.user("brand", 1000).await;
    let (_, other) = app.user("stranger", 1000).await;
    // More than the pipeline queue's prefetch (8): each waits without its slot.
    let mut ids = Vec::new();
    for i in 0..10 {
        ids.push(submit(&app, &key, &format!("launch video {i}")).await);
    }
    for id in &ids {
        tasks::wait_status(&app, &key, id, "WAITING").await;
    }
    let t = tasks::task(&app, &key, &ids[0]).await;
    assert_eq!(t["waiting"]["for"], "approval", "{t}");
    assert!(
        t["result"]["transcribe"].is_object(),
        "what is to be approved shows: {t}"
    );
    assert!(t["result"].get("summarize").is_none(), "{t}");
    let link = t["waiting"]["approval_link"].as_str().unwrap().to_owned();
    assert!(
        link.starts_with(&format!("/v1/approvals/{}.", ids[0])),
        "{link}"
    );

    // Another tenant sees nothing to decide; bad decisions say what is wrong.
    let path = format!("/v1/tasks/{}/approval", ids[0]);
    let (status, _) = decide(&app, Some(&other), &path, json!({"decision": "approve"})).await;
    assert_eq!(status, 404);
    let (status, body) = decide(&app, Some(&key), &path, json!({"decision": "maybe"})).await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (422, Some("decision")),
        "{body}"
    );
    let (status, body) = decide(&app, Some(&key), &path, json!({"verdict": "approve"})).await;
    assert_eq!(status, 422, "an unknown field: {body}");
    let (status, body) = decide(
        &app,
        Some(&key),
        &path,
        json!({"decision": "approve", "comment": "x".repeat(501)}),
    )
    .await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (422, Some("comment"))
    );
    assert_eq!(tasks::task(&app, &key, &ids[0]).await["status"], "WAITING");

    // Approved: the pipeline runs on and is charged in full.
    let (status, body) = decide(
        &app,
        Some(&key),
        &path,
        json!({"decision": "approve", "comment": "on brand"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "PROCESSING");
    let done_task = tasks::wait_status(&app, &key, &ids[0], "SUCCESS").await;
    assert!(done_task["result"]["summarize"].is_object(), "{done_task}");
    let (status, _) = decide(&app, Some(&key), &path, json!({"decision": "approve"})).await;
    assert_eq!(status, 409, "decided already");
    let (status, _) = decide(&app, None, &link, json!({"decision": "reject"})).await;
    assert_eq!(status, 404, "the link was for that one decision");
    // The others still wait, by no worker's leave: read once their checks and the step
    // after the approval have handled all they were given.
    for queue in ["ai.check", "ai.media.summary"] {
        app.drain_key(queue).await;
    }
    for id in &ids[1..] {
        assert_eq!(tasks::task(&app, &key, id).await["status"], "WAITING");
    }
    assert_eq!(
        app.get_json(&key, "/v1/me").await["credits"],
        1000 - COST * ids.len() as i64
    );
    done(env, app).await;
}

async fn a_rejection_or_the_timeout_ends_it_with_the_policy_refund(backend: Backend) {
    let Some((env, app)) = gated_app(backend, "approval_reject", 2).await else {
        return;
    };
    let (_, key) = app.user("brand", 1000).await;
    let rejected = submit(&app, &key, "off-brand video").await;
    let timed_out = submit(&app, &key, "forgotten video").await;
    let t = tasks::wait_status(&app, &key, &rejected, "WAITING").await;
    let link = t["waiting"]["approval_link"].as_str().unwrap().to_owned();
    // By the link, with no account: summarize and build_knowledge_entry never ran.
    let (status, body) = decide(
        &app,
        None,
        &link,
        json!({"decision": "reject", "comment": "off-brand"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "CANCELED");
    assert_eq!(body["error"], "rejected: off-brand");
    let (status, _) = decide(&app, None, &link, json!({"decision": "approve"})).await;
    assert_eq!(status, 404);
    // Nobody decides the other within its 2 s.
    let t = tasks::wait_status(&app, &key, &timed_out, "CANCELED").await;
    assert!(
        t["error"].as_str().unwrap().starts_with("approval_timeout"),
        "{t}"
    );
    assert_eq!(
        app.get_json(&key, "/v1/me").await["credits"],
        1000 - 2 * COST + 2 * (COST * 2 / 4),
        "each got back the two steps it never ran"
    );
    done(env, app).await;
}
