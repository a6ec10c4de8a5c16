//! AI generation tasks end to end, through the HTTP API and the consumers.

use std::time::Duration;

use conveyor::domains::ai_tasks::Status;
use conveyor::domains::ai_tasks::entity::{event, material, task};
use conveyor::domains::ai_tasks::store::{self, Change, Guard};
use conveyor::users::entity::ledger;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};

use crate::helpers::tasks;
use crate::helpers::{Backend, TestApp, TestEnv, done, spawn_app};
use crate::on_every_backend;

on_every_backend!(
    cancel_refunds_follow_the_policy,
    a_task_runs_to_success_and_consumes_its_credits,
    every_kind_succeeds_and_pipeline_steps_run_in_order,
    bad_submissions_get_clear_errors,
    insufficient_credits_is_402,
    a_batch_reserves_what_each_balance_covers,
    concurrent_identical_submissions_create_one_task,
    other_users_tasks_are_invisible,
    listing_pages_newest_first,
    a_transient_failure_retries_then_succeeds,
    exhausted_retries_fail_with_exactly_one_refund,
    a_permanent_failure_dead_letters_and_refunds,
    cancel_stops_a_running_task_and_refunds,
    a_killed_consumer_leaves_a_task_that_finishes_once,
    terminal_states_never_change,
    a_wave_of_results_commits_each_on_its_own_terms,
    a_burst_runs_in_batches_with_each_task_booked_once,
);

async fn app(backend: Backend, test: &str) -> Option<(TestEnv, TestApp)> {
    let env = TestEnv::new(backend, test)
        .await?
        .with_max_attempts("ai.short", 3);
    let app = spawn_app(&env).await;
    app.start_consumers();
    Some((env, app))
}

async fn ledger_of(app: &TestApp, user_id: &str) -> Vec<ledger::Model> {
    ledger::Entity::find()
        .filter(ledger::Column::UserId.eq(user_id))
        .order_by_asc(ledger::Column::Id)
        .all(&app.platform.db)
        .await
        .unwrap()
}

/// The `ai.short` dead letters, once there is one: a task turns FAILED (with its
/// refund) just before its dead letter is recorded.
async fn dead_letters_of(app: &TestApp) -> Vec<conveyor::dead_letters::DeadLetter> {
    let list = || conveyor::dead_letters::list(&app.platform.db, Some("ai.short"), 10);
    crate::helpers::wait_until(Duration::from_secs(10), "the dead letter", || async {
        !list().await.unwrap().is_empty()
    })
    .await;
    list().await.unwrap()
}

async fn events(app: &TestApp, task_id: &str) -> Vec<event::Model> {
    store::events_after(&app.platform.db, task_id, 0)
        .await
        .unwrap()
}

async fn a_task_runs_to_success_and_consumes_its_credits(backend: Backend) {
    let Some((env, app)) = app(backend, "task_runs_to_success").await else {
        return;
    };
    let (user, key) = app.user("ada", 100).await;
    let r = tasks::submit(
        &app,
        &key,
        json!({ "kind": "copywriting", "prompt": "spring sale on sneakers" }),
    )
    .await;
    assert_eq!(r.status(), 202);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["status"], "PENDING");
    let id = body["id"].as_str().unwrap().to_owned();
    assert_eq!(location, format!("/v1/tasks/{id}"));
    assert_eq!(app.credits(&user.id).await, 99, "reserved at submit");

    let t = tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    assert_eq!(t["progress"], 100);
    assert!(
        t["result"]["text"]
            .as_str()
            .unwrap()
            .contains("spring sale"),
        "{t}"
    );
    assert_eq!(t["attempts"], 1, "{t}");
    assert_eq!(app.credits(&user.id).await, 99, "consumed, not refunded");
    let reasons: Vec<String> = ledger_of(&app, &user.id)
        .await
        .into_iter()
        .map(|l| l.reason)
        .collect();
    assert_eq!(reasons, ["grant", "reserve", "consume"]);
    let m = store::material_of(&app.platform.db, &id)
        .await
        .unwrap()
        .expect("a material");
    assert_eq!(m.user_id, user.id);
    // Events: monotonic sequence from 1, ending SUCCESS.
    let evs = events(&app, &id).await;
    assert!(evs.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    assert_eq!(evs[0].seq, 1);
    assert_eq!(
        evs.first().unwrap().status,
        conveyor::domains::ai_tasks::Status::Pending
    );
    assert_eq!(
        evs.last().unwrap().status,
        conveyor::domains::ai_tasks::Status::Success
    );
    assert!(evs.iter().any(
        |e| e.status == conveyor::domains::ai_tasks::Status::Processing
            && e.progress > 0
            && e.progress < 100
    ));
    done(env, app).await;
}

async fn every_kind_succeeds_and_pipeline_steps_run_in_order(backend: Backend) {
    let Some((env, app)) = app(backend, "every_kind_succeeds").await else {
        return;
    };
    let (user, key) = app.user("ada", 1000).await;
    let mut ids = Vec::new();
    for kind in ["copywriting", "image", "video", "model3d", "video_analysis"] {
        let r = tasks::submit(
            &app,
            &key,
            json!({ "kind": kind, "prompt": format!("a {kind} about tea") }),
        )
        .await;
        assert_eq!(r.status(), 202, "{kind}");
        ids.push((
            kind,
            r.json::<Value>().await.unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        ));
    }
    for (kind, id) in &ids {
        let t = tasks::wait_status(&app, &key, id, "SUCCESS").await;
        if *kind == "image" || *kind == "video" || *kind == "model3d" {
            assert!(
                t["result"]["url"].as_str().unwrap().starts_with("https://"),
                "{t}"
            );
        }
    }
    let (_, pipeline) = &ids[4];
    let steps: Vec<String> = events(&app, pipeline)
        .await
        .into_iter()
        .filter(|e| {
            e.message
                .as_deref()
                .is_some_and(|m| m.ends_with(" started"))
        })
        .filter_map(|e| e.step)
        .collect();
    assert_eq!(
        steps,
        [
            "extract_audio",
            "transcribe",
            "summarize",
            "build_knowledge_entry"
        ]
    );
    let t = tasks::task(&app, &key, pipeline).await;
    for step in [
        "extract_audio",
        "transcribe",
        "summarize",
        "build_knowledge_entry",
    ] {
        assert!(t["result"][step].is_object(), "{step} output kept: {t}");
    }
    assert_eq!(app.credits(&user.id).await, 1000 - 1 - 4 - 20 - 30 - 10);
    done(env, app).await;
}

async fn bad_submissions_get_clear_errors(backend: Backend) {
    let Some((env, app)) = app(backend, "bad_submissions").await else {
        return;
    };
    let (user, key) = app.user("ada", 100).await;
    let cases = [
        (json!({ "kind": "hologram", "prompt": "x" }), 422, "kind"),
        (json!({ "kind": "image", "prompt": "   " }), 422, "prompt"),
        (
            json!({ "kind": "image", "prompt": "x".repeat(5000) }),
            422,
            "prompt",
        ),
        (
            json!({ "kind": "image", "prompt": "x", "params": [1, 2] }),
            422,
            "params",
        ),
        (
            json!({ "kind": "image", "prompt": "x", "colour": "red" }),
            422,
            "colour",
        ),
        (json!({ "prompt": "x" }), 422, "kind"),
        // Injection is on in tests, but a step may not outlast its kind's deadline (120 s).
        (
            json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "step_ms": 120_001 } } }),
            422,
            "params.simulate.step_ms",
        ),
        (
            json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "step_ms": "slow" } } }),
            422,
            "params.simulate.step_ms",
        ),
    ];
    for (body, status, field) in cases {
        let r = tasks::submit(&app, &key, body.clone()).await;
        assert_eq!(r.status(), status, "{body}");
        let err: Value = r.json().await.unwrap();
        assert_eq!(err["error"]["field"], field, "{body} → {err}");
    }
    let r = app
        .client
        .post(app.url("/v1/tasks"))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["code"],
        "malformed_json"
    );
    // A fresh client: the server closes a connection whose body it refused.
    let r = reqwest::Client::new()
        .post(app.url("/v1/tasks"))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(format!(
            "{{\"kind\":\"image\",\"prompt\":\"{}\"}}",
            "x".repeat(300_000)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["code"],
        "payload_too_large"
    );
    let r = app
        .client
        .post(app.url("/v1/tasks"))
        .json(&json!({ "kind": "image", "prompt": "x" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = tasks::submit(&app, &key, json!({ "kind": "image", "prompt": "x" })).await;
    let r2 = app
        .client
        .post(app.url("/v1/tasks"))
        .bearer_auth(&key)
        .header("idempotency-key", "x".repeat(200))
        .json(&json!({ "kind": "image", "prompt": "x" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    assert_eq!(r2.status(), 400, "oversized Idempotency-Key");
    assert_eq!(
        task::Entity::find().count(&app.platform.db).await.unwrap(),
        1,
        "nothing else was created"
    );
    assert_eq!(app.credits(&user.id).await, 96);
    done(env, app).await;
}

async fn insufficient_credits_is_402(backend: Backend) {
    let Some((env, app)) = app(backend, "insufficient_credits").await else {
        return;
    };
    let (user, key) = app.user("ada", 3).await;
    let r = tasks::submit(&app, &key, json!({ "kind": "image", "prompt": "x" })).await;
    assert_eq!(r.status(), 402);
    let err: Value = r.json().await.unwrap();
    assert_eq!(err["error"]["balance"], 3);
    assert_eq!(err["error"]["needed"], 4);
    assert_eq!(app.credits(&user.id).await, 3);
    assert_eq!(
        task::Entity::find().count(&app.platform.db).await.unwrap(),
        0
    );
    done(env, app).await;
}

async fn concurrent_identical_submissions_create_one_task(backend: Backend) {
    let Some((env, app)) = app(backend, "idempotent_submit").await else {
        return;
    };
    let (user, key) = app.user("ada", 100).await;
    let body = json!({ "kind": "image", "prompt": "one poster" });
    let requests = (0..10).map(|_| {
        app.client
            .post(app.url("/v1/tasks"))
            .bearer_auth(&key)
            .header("idempotency-key", "poster-1")
            .json(&body)
            .send()
    });
    let responses = futures::future::join_all(requests).await;
    let mut ids = std::collections::HashSet::new();
    for r in responses {
        let r = r.unwrap();
        assert_eq!(r.status(), 202);
        ids.insert(
            r.json::<Value>().await.unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(ids.len(), 1, "one task for ten requests");
    assert_eq!(
        task::Entity::find().count(&app.platform.db).await.unwrap(),
        1
    );
    assert_eq!(app.credits(&user.id).await, 96, "charged once");
    let other = app
        .client
        .post(app.url("/v1/tasks"))
        .bearer_auth(&key)
        .header("idempotency-key", "poster-1")
        .json(&json!({ "kind": "image", "prompt": "another poster" }))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 422);
    assert_eq!(
        other.json::<Value>().await.unwrap()["error"]["code"],
        "idempotency_key_reused"
    );
    done(env, app).await;
}

async fn other_users_tasks_are_invisible(backend: Backend) {
    let Some((env, app)) = app(backend, "cross_user_404").await else {
        return;
    };
    let (_, alice) = app.user("alice", 100).await;
    let (_, bob) = app.user("bob", 100).await;
    let id = tasks::submit(
        &app,
        &alice,
        json!({ "kind": "copywriting", "prompt": "x" }),
    )
    .await
    .json::<Value>()
    .await
    .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = app
        .client
        .get(app.url(&format!("/v1/tasks/{id}")))
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = app
        .client
        .post(app.url(&format!("/v1/tasks/{id}/cancel")))
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let list: Value = app
        .client
        .get(app.url("/v1/tasks"))
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 0);
    let (_, admin) = conveyor::users::create(&app.platform.db, "root", 0, true)
        .await
        .unwrap();
    let r = app
        .client
        .get(app.url(&format!("/v1/tasks/{id}")))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "admins read any task");
    done(env, app).await;
}

async fn listing_pages_newest_first(backend: Backend) {
    let Some((env, app)) = app(backend, "listing_pages").await else {
        return;
    };
    let (_, key) = app.user("ada", 1000).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let kind = if i % 2 == 0 { "copywriting" } else { "image" };
        let r = tasks::submit(
            &app,
            &key,
            json!({ "kind": kind, "prompt": format!("p{i}") }),
        )
        .await;
        ids.push(
            r.json::<Value>().await.unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    ids.reverse();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut url = app.url("/v1/tasks?limit=2");
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let page: Value = app
            .client
            .get(url)
            .bearer_auth(&key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for t in page["items"].as_array().unwrap() {
            seen.push(t["id"].as_str().unwrap().to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, ids);
    let images: Value = app
        .client
        .get(app.url("/v1/tasks?kind=image"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(images["items"].as_array().unwrap().len(), 2);
    let r = app
        .client
        .get(app.url("/v1/tasks?limit=500"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = app
        .client
        .get(app.url("/v1/tasks?status=SLEEPING"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    done(env, app).await;
}

async fn a_transient_failure_retries_then_succeeds(backend: Backend) {
    let Some((env, app)) = app(backend, "transient_then_success").await else {
        return;
    };
    let (user, key) = app.user("ada", 100).await;
    let r = tasks::submit(&app, &key, json!({ "kind": "copywriting", "prompt": "x", "params": { "simulate": { "fail_transient_attempts": 1 } } }))
        .await;
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
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
    let r = tasks::submit(&app, &key, json!({ "kind": "copywriting", "prompt": "x", "params": { "simulate": { "fail_transient_attempts": 99 } } }))
        .await;
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
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
    let r = tasks::submit(&app, &key, json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "fail_permanent": true } } }))
        .await;
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
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
    let r = tasks::submit(
        &app,
        &key,
        json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "step_ms": 4000 } } }),
    )
    .await;
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
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
    assert!(
        store::material_of(&app.platform.db, &id)
            .await
            .unwrap()
            .is_none()
    );
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
        async {
            tasks::submit(&app, &key, body)
                .await
                .json::<Value>()
                .await
                .unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        }
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
    // A 4-step pipeline (cost 10) at its first step: 3 steps back and half of the first.
    let id = submit("video_analysis").await;
    tasks::wait_status(&app, &key, &id, "PROCESSING").await;
    cancel(id.clone(), key.clone()).await;
    assert_eq!(
        app.credits(&user.id).await,
        1000 - 10 + 8,
        "10 × (3 + 0.5) / 4, rounded down"
    );
    // An admin cancels a one-step image (cost 4): half back, audited.
    let (_, root) = conveyor::users::create(&app.platform.db, "root", 0, true)
        .await
        .unwrap();
    let image = submit("image").await;
    tasks::wait_status(&app, &key, &image, "PROCESSING").await;
    cancel(image.clone(), root).await;
    assert_eq!(app.credits(&user.id).await, 998 - 4 + 2);
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
    assert!(refunds.contains(&8) && refunds.contains(&2), "{refunds:?}");
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

/// Group commit reserves a whole batch at once: each user's balance covers their
/// submissions in order, a shortfall fails only the submissions it affects, and the
/// ledger and balances agree afterwards.
async fn a_batch_reserves_what_each_balance_covers(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "batch_reserve").await else {
        return;
    };
    let platform = env.platform().await;
    let db = &platform.db;
    let (rich, _) = conveyor::users::create(db, "rich", 100, false)
        .await
        .unwrap();
    let (tight, _) = conveyor::users::create(db, "tight", 10, false)
        .await
        .unwrap();
    let (broke, _) = conveyor::users::create(db, "broke", 0, false)
        .await
        .unwrap();
    let new = |user: &str, cost: i64| store::NewTask {
        max_in_flight: 0,
        user_id: user.to_owned(),
        kind: conveyor::domains::ai_tasks::TaskKind::Copywriting,
        prompt: "x".into(),
        params: json!({}),
        cost,
    };
    let balance = |id: String| async move {
        conveyor::users::entity::user::Entity::find_by_id(id)
            .one(db)
            .await
            .unwrap()
            .unwrap()
            .credits
    };
    // The one-statement path charges all or nothing: tight's 12 exceed its 10.
    let uncovered = [
        new(&rich.id, 30),
        new(&tight.id, 4),
        new(&tight.id, 4),
        new(&tight.id, 4),
    ];
    let txn = sea_orm::TransactionTrait::begin(db).await.unwrap();
    let answer = store::submit_many_if_covered(&txn, &uncovered, 65536)
        .await
        .unwrap();
    assert!(
        answer.is_none(),
        "a short balance sends the batch to the exact path"
    );
    txn.rollback().await.unwrap();
    assert_eq!(balance(rich.id.clone()).await, 100);
    assert_eq!(balance(tight.id.clone()).await, 10);

    // tight (10): 4 + 4 fit, the third 4 does not; a free task always fits.
    let batch = [
        new(&tight.id, 4),
        new(&rich.id, 30),
        new(&tight.id, 4),
        new(&broke.id, 1),
        new(&tight.id, 4),
        new(&broke.id, 0),
        new(&rich.id, 30),
    ];
    let txn = sea_orm::TransactionTrait::begin(db).await.unwrap();
    let results = store::submit_many(&txn, &batch, 65536).await.unwrap();
    txn.commit().await.unwrap();
    let outcome: Vec<Result<(), i64>> = results
        .iter()
        .map(|r| match r {
            Ok(_) => Ok(()),
            Err(store::StoreError::InsufficientCredits { balance, .. }) => Err(*balance),
            Err(e) => panic!("unexpected error: {e}"),
        })
        .collect();
    assert_eq!(
        outcome,
        vec![Ok(()), Ok(()), Ok(()), Err(0), Err(2), Ok(()), Ok(())],
        "per-submission reservations"
    );
    for (user, balance, reserves) in [(&rich, 40, 2), (&tight, 2, 2), (&broke, 0, 0)] {
        let u = conveyor::users::entity::user::Entity::find_by_id(user.id.clone())
            .one(db)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(u.credits, balance, "balance of {}", user.name);
        let rows = ledger::Entity::find()
            .filter(ledger::Column::UserId.eq(user.id.as_str()))
            .filter(ledger::Column::Reason.eq("reserve"))
            .count(db)
            .await
            .unwrap();
        assert_eq!(rows, reserves, "reserve rows of {}", user.name);
    }
    let tasks = task::Entity::find().count(db).await.unwrap();
    assert_eq!(tasks, 5, "one task per reserved submission");

    // Covered: one statement charges each user their batch total.
    let covered = [
        new(&rich.id, 30),
        new(&tight.id, 1),
        new(&rich.id, 5),
        new(&broke.id, 0),
    ];
    let txn = sea_orm::TransactionTrait::begin(db).await.unwrap();
    let results = store::submit_many_if_covered(&txn, &covered, 65536)
        .await
        .unwrap()
        .expect("every balance covers its share");
    txn.commit().await.unwrap();
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(balance(rich.id.clone()).await, 5);
    assert_eq!(balance(tight.id.clone()).await, 1);
    assert_eq!(balance(broke.id.clone()).await, 0);
    let tasks = task::Entity::find().count(db).await.unwrap();
    assert_eq!(tasks, 9);
}

async fn a_killed_consumer_leaves_a_task_that_finishes_once(backend: Backend) {
    // No API here: the test runs the consumers itself, so it can kill them.
    let Some(env) = TestEnv::new(backend, "killed_consumer").await else {
        return;
    };
    let platform = env.platform().await;
    let (user, _) = conveyor::users::create(&platform.db, "ada", 100, false)
        .await
        .unwrap();
    let txn = sea_orm::TransactionTrait::begin(&platform.db)
        .await
        .unwrap();
    let params = json!({ "simulate": { "step_ms": 1500 } });
    let kind = conveyor::domains::ai_tasks::TaskKind::Image;
    let new = store::NewTask {
        user_id: user.id.clone(),
        kind,
        prompt: "x".into(),
        params,
        cost: 4,
        max_in_flight: 0,
    };
    let (t, _) = store::submit(&txn, &new, 65536).await.unwrap();
    txn.commit().await.unwrap();
    let id = t.id;
    let status = |p: conveyor::app::Platform, id: String| async move {
        store::get(&p.db, &id).await.unwrap().unwrap()
    };

    let first = {
        let p = platform.clone();
        tokio::spawn(async move {
            conveyor::app::run_workers(
                &p,
                conveyor::domains::ALL,
                None,
                tokio_util::sync::CancellationToken::new(),
            )
            .await
        })
    };
    crate::helpers::wait_until(Duration::from_secs(20), "PROCESSING", || async {
        status(platform.clone(), id.clone()).await.status
            == conveyor::domains::ai_tasks::Status::Processing
    })
    .await;
    first.abort(); // killed mid-task: no ack, no more heartbeats
    let _ = first.await;

    let token = tokio_util::sync::CancellationToken::new();
    let second = {
        let (p, token) = (platform.clone(), token.clone());
        tokio::spawn(async move {
            conveyor::app::run_workers(&p, conveyor::domains::ALL, None, token).await
        })
    };
    crate::helpers::wait_until(
        Duration::from_secs(30),
        "SUCCESS after the kill",
        || async {
            status(platform.clone(), id.clone()).await.status
                == conveyor::domains::ai_tasks::Status::Success
        },
    )
    .await;
    let done = status(platform.clone(), id.clone()).await;
    assert!(
        done.attempt >= 2,
        "a second attempt finished it (attempt {})",
        done.attempt
    );
    // Settled: a lost attempt writing late would have written by now.
    crate::helpers::drain(&platform, &conveyor::domains::ai_tasks::queues::AI_SHORT).await;
    let materials = material::Entity::find()
        .filter(material::Column::TaskId.eq(id.as_str()))
        .count(&platform.db)
        .await
        .unwrap();
    assert_eq!(materials, 1, "the effect happened once");
    let consumed = ledger::Entity::find()
        .filter(ledger::Column::UserId.eq(user.id.as_str()))
        .filter(ledger::Column::Reason.eq("consume"))
        .count(&platform.db)
        .await
        .unwrap();
    assert_eq!(consumed, 1);
    token.cancel();
    second.await.unwrap().unwrap();
    env.cleanup(Some(&platform)).await;
}

async fn terminal_states_never_change(backend: Backend) {
    let Some((env, app)) = app(backend, "terminal_states").await else {
        return;
    };
    let (user, key) = app.user("ada", 100).await;
    let id = tasks::submit(&app, &key, json!({ "kind": "copywriting", "prompt": "x" }))
        .await
        .json::<Value>()
        .await
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    let db = &app.platform.db;
    // Forbidden transitions are refused by their guards.
    let to_failed = store::finish_unsuccessfully(
        db,
        &id,
        &Guard::status(&[Status::Pending, Status::Processing, Status::Retrying]),
        Status::Failed,
        None,
    )
    .await
    .unwrap();
    assert!(to_failed.is_none(), "SUCCESS → FAILED refused");
    let claim = Change {
        status: Some(Status::Processing),
        claim: true,
        ..Default::default()
    };
    assert!(
        store::apply(
            db,
            &id,
            &Guard::status(&[Status::Pending, Status::Retrying]),
            claim
        )
        .await
        .unwrap()
        .is_none()
    );
    let stale_write = Change {
        progress: Some(5),
        ..Default::default()
    };
    assert!(
        store::apply(db, &id, &Guard::holder(1), stale_write)
            .await
            .unwrap()
            .is_none(),
        "no write without the lease"
    );
    // A duplicate run message for the finished task changes nothing.
    let dup = conveyor::broker::Envelope::new("ai.task.run", json!({ "task_id": id, "step": 0 }));
    app.platform
        .broker
        .publish(
            conveyor::broker::Target::Queue(&conveyor::domains::ai_tasks::queues::AI_SHORT),
            &dup,
        )
        .await
        .unwrap();
    // Settled: had the duplicate run done anything, it would show now.
    app.drain(&conveyor::domains::ai_tasks::queues::AI_SHORT)
        .await;
    let after = tasks::task(&app, &key, &id).await;
    assert_eq!(before["updated_at"], after["updated_at"]);
    assert_eq!(after["status"], "SUCCESS");
    assert_eq!(app.credits(&user.id).await, 99);
    let seqs = task::Entity::find_by_id(id.clone())
        .one(db)
        .await
        .unwrap()
        .unwrap()
        .seq;
    assert_eq!(seqs as usize, events(&app, &id).await.len());
    // Fenced by the task's own state: the AI queues read and write no fence rows.
    use conveyor::consumer::fence_entity;
    let fence_rows = fence_entity::Entity::find()
        .filter(fence_entity::Column::Queue.eq("ai.short"))
        .count(db)
        .await
        .unwrap();
    assert_eq!(fence_rows, 0);
    done(env, app).await;
}

/// Failure injection is off by default (only the test overlay turns it on): a tenant
/// cannot make a task fail or hold a worker at will.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_injection_is_refused_when_off() {
    let Some(mut env) = TestEnv::new(Backend::Embedded, "injection_off").await else {
        return;
    };
    env.settings.sections.get_mut("ai").unwrap()["allow_failure_injection"] = json!(false);
    let app = spawn_app(&env).await;
    let (_, key) = app.user("ada", 100).await;
    let r = tasks::submit(&app, &key, json!({ "kind": "copywriting", "prompt": "x", "params": { "simulate": { "step_ms": 60000 } } }))
        .await;
    assert_eq!(r.status(), 422);
    let err: Value = r.json().await.unwrap();
    assert_eq!(err["error"]["field"], "params.simulate", "{err}");
    // Other params are the tenant's own business.
    let r = tasks::submit(
        &app,
        &key,
        json!({ "kind": "copywriting", "prompt": "x", "params": { "tone": "warm" } }),
    )
    .await;
    assert_eq!(r.status(), 202);
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// The consumer's batch path at the store: one claim for several tasks, then one wave
/// commit where each task keeps its own result, a pipeline moves to its next step, a
/// finished task books its credits and material, and a result whose attempt lost the
/// task (re-driven meanwhile) is fenced out without touching its neighbours.
async fn a_wave_of_results_commits_each_on_its_own_terms(backend: Backend) {
    use conveyor::domains::ai_tasks::TaskKind;
    use conveyor::domains::ai_tasks::store::{NewTask, StepClaim, StepResult};
    use sea_orm::TransactionTrait;
    let Some(env) = TestEnv::new(backend, "wave_commit").await else {
        return;
    };
    // No server, consumers or relay (an embedded `serve` would run the pipeline's next
    // step in-process meanwhile): the test plays the consumer.
    let platform = env.platform().await;
    let (user, _) = conveyor::users::create(&platform.db, "wave", 100, false)
        .await
        .unwrap();
    let db = &platform.db;
    let mut tasks = Vec::new();
    for (kind, prompt) in [
        (TaskKind::Copywriting, "one"),
        (TaskKind::Copywriting, "two"),
        (TaskKind::VideoAnalysis, "three"),
        (TaskKind::Copywriting, "four"),
    ] {
        let txn = db.begin().await.unwrap();
        let new = NewTask {
            user_id: user.id.clone(),
            kind,
            prompt: prompt.into(),
            params: json!({}),
            cost: 1,
            max_in_flight: 0,
        };
        let (t, _) = store::submit(&txn, &new, 1 << 20).await.unwrap();
        txn.commit().await.unwrap();
        tasks.push(t);
    }
    let first_step = |t: &store::Task| t.kind.steps()[0];
    let wanted: Vec<StepClaim<'_>> = tasks
        .iter()
        .map(|t| StepClaim {
            id: &t.id,
            step_index: 0,
            step: first_step(t),
        })
        .collect();
    let long_ago = chrono::Utc::now() - chrono::Duration::hours(1);
    let claimed = store::claim_many(db, &wanted, long_ago).await.unwrap();
    assert_eq!(claimed.len(), 4, "every task claimed");
    assert!(
        store::claim_many(db, &wanted, long_ago)
            .await
            .unwrap()
            .is_empty(),
        "a live lease is not claimed again"
    );
    let mut claimed: Vec<store::Task> = claimed.into_iter().map(|(t, _)| t).collect();
    claimed.sort_by_key(|t| tasks.iter().position(|x| x.id == t.id));
    assert!(
        claimed
            .iter()
            .all(|t| t.attempt == 1 && t.status == Status::Processing)
    );
    // The fourth is re-driven before its result commits: its attempt no longer holds.
    let mut stale = claimed[3].clone();
    stale.attempt = 0;
    let results: Vec<StepResult<'_>> = [&claimed[0], &claimed[1], &claimed[2], &stale]
        .into_iter()
        .map(|t| StepResult {
            task: t,
            step: first_step(t),
            result: json!({ "text": format!("out of {}", t.prompt) }),
            last: t.kind.steps().len() == 1,
        })
        .collect();
    let txn = db.begin().await.unwrap();
    let applied = store::commit_steps(&txn, &results, 1 << 20).await.unwrap();
    txn.commit().await.unwrap();
    let states: Vec<Option<(Status, i32)>> = applied
        .iter()
        .map(|a| a.as_ref().map(|(t, _)| (t.status, t.step_index)))
        .collect();
    assert_eq!(
        states,
        [
            Some((Status::Success, 1)),
            Some((Status::Success, 1)),
            Some((Status::Processing, 1)),
            None
        ]
    );
    for (t, prompt) in [(&claimed[0], "one"), (&claimed[1], "two")] {
        let now = store::get(db, &t.id).await.unwrap().unwrap();
        let result: Value = serde_json::from_str(now.result.as_deref().unwrap()).unwrap();
        assert_eq!(result["text"], format!("out of {prompt}"), "its own result");
        assert!(store::material_of(db, &t.id).await.unwrap().is_some());
        assert!(now.heartbeat_at.is_none() && now.finished_at.is_some());
    }
    let pipeline = store::get(db, &claimed[2].id).await.unwrap().unwrap();
    assert!(
        pipeline.heartbeat_at.is_none(),
        "the lease is released between steps"
    );
    assert!(
        store::material_of(db, &claimed[2].id)
            .await
            .unwrap()
            .is_none()
    );
    let untouched = store::get(db, &claimed[3].id).await.unwrap().unwrap();
    assert_eq!(untouched.status, Status::Processing);
    assert!(
        untouched.result.is_none(),
        "the fenced result is not written"
    );
    let consumed = ledger::Entity::find()
        .filter(ledger::Column::UserId.eq(&user.id))
        .filter(ledger::Column::Reason.eq("consume"))
        .count(db)
        .await
        .unwrap();
    assert_eq!(consumed, 2, "one consume per finished task");

    // A stale message of the pipeline's first step (a repeat of a step that committed:
    // no fence row stops it, the task's state does) is dead-lettered: the task, now at
    // its second step, is not failed for it.
    let handlers = (conveyor::domains::ai_tasks::DOMAIN.install)(&platform)
        .await
        .unwrap()
        .handlers;
    let Some((queue, conveyor::consumer::Worker::Batch(handler))) = handlers
        .iter()
        .find(|(q, _)| q.key == claimed[2].kind.queue().key)
    else {
        panic!("a batch handler for the pipeline's queue");
    };
    let stale_step = conveyor::broker::Envelope::new(
        conveyor::domains::ai_tasks::messages::RUN_STEP,
        json!({ "task_id": claimed[2].id, "step": 0 }),
    );
    let fate = conveyor::consumer::Fate::DeadLetter {
        reason: conveyor::broker::DeadReason::Exhausted,
        error: "provider down".into(),
    };
    let ctx = platform.consumer_deps().context(queue);
    handler.on_failure(&ctx, &stale_step, &fate).await.unwrap();
    let pipeline = store::get(db, &claimed[2].id).await.unwrap().unwrap();
    assert_eq!(
        (pipeline.status, pipeline.step_index),
        (Status::Processing, 1),
        "a stale step's dead letter leaves the task at its current step"
    );
    // The same message for the step the task is at fails it.
    let current_step = conveyor::broker::Envelope::new(
        conveyor::domains::ai_tasks::messages::RUN_STEP,
        json!({ "task_id": claimed[2].id, "step": 1 }),
    );
    handler
        .on_failure(&ctx, &current_step, &fate)
        .await
        .unwrap();
    let pipeline = store::get(db, &claimed[2].id).await.unwrap().unwrap();
    assert_eq!(pipeline.status, Status::Failed);
    env.cleanup(Some(&platform)).await;
}

/// `ai.short` with batches of 16 (what short, even steps run with): a burst of tasks,
/// some of them pipelines' first steps on another queue, all end SUCCESS with one
/// consume each, one material each, and events in sequence.
async fn a_burst_runs_in_batches_with_each_task_booked_once(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "burst_in_batches").await else {
        return;
    };
    env.settings.queues.insert(
        "ai.short".into(),
        conveyor::broker::settings::QueueOverride {
            batch: Some(16),
            linger_ms: Some(20),
            ..Default::default()
        },
    );
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (user, key) = app.user("burst", 1000).await;
    let ids = tasks::copywriting_burst(&app, &key, 40, "burst").await;
    for id in &ids {
        let t = tasks::wait_status(&app, &key, id, "SUCCESS").await;
        assert_eq!(t["attempts"], 1, "{t}");
        assert!(
            store::material_of(&app.platform.db, id)
                .await
                .unwrap()
                .is_some()
        );
        let evs = events(&app, id).await;
        assert!(evs.windows(2).all(|w| w[1].seq == w[0].seq + 1), "{evs:?}");
    }
    let consumed = ledger::Entity::find()
        .filter(ledger::Column::UserId.eq(&user.id))
        .filter(ledger::Column::Reason.eq("consume"))
        .count(&app.platform.db)
        .await
        .unwrap();
    assert_eq!(consumed, 40, "one consume per task");
    assert_eq!(app.credits(&user.id).await, 1000 - 40);
    done(env, app).await;
}
