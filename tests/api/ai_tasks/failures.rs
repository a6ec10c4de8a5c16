//! Failing and canceling: retries, exactly one refund, dead letters, cancel while
//! running and the cancel-refund policy.

use super::*;
use crate::on_every_backend;

on_every_backend!(
    cancel_refunds_follow_the_policy,
    a_transient_failure_retries_then_succeeds,
    exhausted_retries_fail_with_exactly_one_refund,
    a_permanent_failure_dead_letters_and_refunds,
    cancel_stops_a_running_task_and_refunds,
);

async fn a_transient_failure_retries_then_succeeds(backend: Backend) {
    let Some((env, app)) = app(backend, "transient_then_success").await else {
        return;
    };
    let (user, key) = app.user("ada", 100).await;
    let id = tasks::submit_id(&app, &key, json!({ "kind": "copywriting", "prompt": "x", "params": { "simulate": { "fail_transient_attempts": 1 } } }))
        .await;
    let t = tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    assert_eq!(t["attempts"], 2);
    let statuses: Vec<_> = events(&app, &id)
        .await
        .into_iter()
        .map(|e| e.status)
        .collect();
    assert!(
        statuses.contains(&conveyor::domains::ai_tasks::Status::Retrying),
        "{statuses:?}"
    );
    assert_eq!(app.credits(&user.id).await, 99);
    done(env, app).await;
}

async fn exhausted_retries_fail_with_exactly_one_refund(backend: Backend) {
    let Some((env, app)) = app(backend, "exhausted_retries_refund").await else {
        return;
    };
    let (user, key) = app.user("ada", 100).await;
    let id = tasks::submit_id(&app, &key, json!({ "kind": "copywriting", "prompt": "x", "params": { "simulate": { "fail_transient_attempts": 99 } } }))
        .await;
    let t = tasks::wait_status(&app, &key, &id, "FAILED").await;
    // A stable code and a short message; the provider's own words stay in the log.
    let error = t["error"].as_str().unwrap();
    assert!(
        error.starts_with("retries_exhausted: provider_unavailable:"),
        "{t}"
    );
    assert!(!error.contains("simulated"), "{t}");
    assert_eq!(t["attempts"], 3);
    // The refund rides the outbox; settled, it has landed.
    app.drain(&conveyor::domains::ai_tasks::queues::AI_SHORT)
        .await;
    assert_eq!(app.credits(&user.id).await, 100, "refunded");
    let refunds = ledger_of(&app, &user.id)
        .await
        .into_iter()
        .filter(|l| l.reason == "refund")
        .count();
    assert_eq!(refunds, 1);
    let dead = dead_letters_of(&app).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].reason, "exhausted");
    done(env, app).await;
}

async fn a_permanent_failure_dead_letters_and_refunds(backend: Backend) {
    let Some((env, app)) = app(backend, "permanent_failure_refund").await else {
        return;
    };
    let (user, key) = app.user("ada", 100).await;
    let id = tasks::submit_id(&app, &key, json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "fail_permanent": true } } }))
        .await;
    let t = tasks::wait_status(&app, &key, &id, "FAILED").await;
    assert!(
        t["error"]
            .as_str()
            .unwrap()
            .starts_with("provider_rejected:"),
        "{t}"
    );
    assert_eq!(t["attempts"], 1, "no retry");
    assert_eq!(app.credits(&user.id).await, 100);
    let dead = dead_letters_of(&app).await;
    assert_eq!(dead[0].reason, "permanent");
    done(env, app).await;
}

async fn cancel_stops_a_running_task_and_refunds(backend: Backend) {
    let Some((env, app)) = app(backend, "cancel_mid_run").await else {
        return;
    };
    let (user, key) = app.user("ada", 100).await;
    let id = tasks::submit_id(
        &app,
        &key,
        json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "step_ms": 4000 } } }),
    )
    .await;
    tasks::wait_status(&app, &key, &id, "PROCESSING").await;
    let r = app
        .client
        .post(app.url(&format!("/v1/tasks/{id}/cancel")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "CANCELED");
    // Started: its one step's provider call is spent (cancel_refund_started_percent 0).
    assert_eq!(app.credits(&user.id).await, 96, "kept as consumed");
    // The running attempt notices the cancel at its next step and settles.
    app.drain(&conveyor::domains::ai_tasks::queues::AI_SHORT)
        .await;
    let t = tasks::task(&app, &key, &id).await;
    assert_eq!(
        t["status"], "CANCELED",
        "the running attempt stopped and wrote nothing"
    );
    assert!(material_of(&app.platform.db, &id).await.unwrap().is_none());
    let r = app
        .client
        .post(app.url(&format!("/v1/tasks/{id}/cancel")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    let ledger = ledger_of(&app, &user.id).await;
    assert_eq!(ledger.iter().filter(|l| l.reason == "refund").count(), 0);
    assert_eq!(ledger.iter().filter(|l| l.reason == "consume").count(), 1);
    done(env, app).await;
}

/// The cancel policy: never started → everything back; started → the steps not started
/// plus `ai.cancel_refund_started_percent` of the step it was at; booked in the ledger;
/// an admin's cancel of someone else's task is audited.
async fn cancel_refunds_follow_the_policy(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "cancel_policy").await else {
        return;
    };
    env.settings.sections.get_mut("ai").unwrap()["cancel_refund_started_percent"] = json!(50);
    let app = spawn_app(&env).await;
    let (user, key) = app.user("ada", 1000).await;
    let cancel = |id: String, key: String| {
        let (client, url) = (
            app.client.clone(),
            app.url(&format!("/v1/tasks/{id}/cancel")),
        );
        async move {
            let r = client.post(url).bearer_auth(key).send().await.unwrap();
            assert_eq!(r.status(), 200);
        }
    };
    let submit = |kind: &str| {
        let body =
            json!({ "kind": kind, "prompt": "x", "params": { "simulate": { "step_ms": 5000 } } });
        async { tasks::submit_id(&app, &key, body).await }
    };
    // Never started (RabbitMQ: no consumer yet; the embedded broker runs its consumers
    // in the server, so there a task starts at once).
    if backend.is_real() {
        let id = submit("video").await;
        cancel(id, key.clone()).await;
        assert_eq!(
            app.credits(&user.id).await,
            1000,
            "a PENDING task refunds in full"
        );
    }
    app.start_consumers();
    // A 4-step pipeline (cost 10) at its second step (the extraction, FFmpeg's, is quick):
    // 2 steps back and half of the second.
    let upload = crate::helpers::videos::analysable(&app, &key).await;
    let body = json!({ "kind": "video_analysis", "prompt": "x",
        "params": { "upload_id": upload, "simulate": { "step_ms": 5000 } } });
    let id = tasks::submit_id(&app, &key, body).await;
    crate::helpers::wait_until(
        Duration::from_secs(30),
        "the transcription running",
        || async {
            let t = tasks::task(&app, &key, &id).await;
            t["status"] == "PROCESSING" && t["step"] == "transcribe"
        },
    )
    .await;
    cancel(id.clone(), key.clone()).await;
    assert_eq!(
        app.credits(&user.id).await,
        1000 - 10 + 6,
        "10 × (2 + 0.5) / 4, rounded down"
    );
    // An admin cancels a one-step image (cost 4): half back, audited.
    let (_, root) = conveyor::users::create(&app.platform.db, "root", 0, true)
        .await
        .unwrap();
    let image = submit("image").await;
    tasks::wait_status(&app, &key, &image, "PROCESSING").await;
    cancel(image.clone(), root).await;
    assert_eq!(app.credits(&user.id).await, 996 - 4 + 2);
    let trail = conveyor::users::audit::of(&app.platform.db, &format!("task:{image}"))
        .await
        .unwrap();
    assert_eq!(trail.len(), 1);
    assert_eq!(trail[0].action, "task.cancel");
    assert!(
        trail[0].detail.contains("\"refunded\":2"),
        "{}",
        trail[0].detail
    );
    // The ledger adds up: every refund and consume booked once per task.
    let ledger = ledger_of(&app, &user.id).await;
    let refunds: Vec<i64> = ledger
        .iter()
        .filter(|l| l.reason == "refund")
        .map(|l| l.delta)
        .collect();
    assert!(refunds.contains(&6) && refunds.contains(&2), "{refunds:?}");
    assert_eq!(
        ledger.iter().map(|l| l.delta).sum::<i64>(),
        app.credits(&user.id).await
    );
    // The owner's own cancel is not an admin action.
    assert!(
        conveyor::users::audit::of(&app.platform.db, &format!("task:{id}"))
            .await
            .unwrap()
            .is_empty()
    );
    done(env, app).await;
}
