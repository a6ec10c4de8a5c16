//! Submitting: validation, credits (402, a batch reserving what each balance covers),
//! idempotent twins, visibility and listing.

use axum::http::Method;

use super::*;
use crate::helpers::Direct;
use crate::on_every_backend;

on_every_backend!(
    insufficient_credits_is_402,
    a_batch_reserves_what_each_balance_covers,
    concurrent_identical_submissions_create_one_task,
    other_users_tasks_are_invisible,
    listing_pages_newest_first,
);

/// The refusal matrix, straight through the router (it depends on no backend).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_submissions_get_clear_errors() {
    let Some(env) = TestEnv::new(Backend::Embedded, "bad_submissions").await else {
        return;
    };
    let app = Direct::new(&env).await;
    let (user, key) = conveyor::users::create(&app.platform.db, "ada", 100, false)
        .await
        .unwrap();
    let submit = async |body: String, headers: &[(&str, &str)]| {
        app.call(Method::POST, "/v1/tasks", Some(&key), body, headers)
            .await
    };
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
        let (got, err) = submit(body.to_string(), &[]).await;
        assert_eq!(got, status, "{body}");
        assert_eq!(err["error"]["field"], field, "{body} → {err}");
    }
    let (status, err) = submit("{not json".into(), &[]).await;
    assert_eq!(status, 400);
    assert_eq!(err["error"]["code"], "malformed_json");
    // serde takes a struct written as an array of its fields; a body is an object only.
    let (status, err) = submit(json!(["image", "x"]).to_string(), &[]).await;
    assert_eq!(status, 422, "{err}");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains("expected a JSON object"), "{err}");
    assert!(err["error"]["field"].is_null(), "{err}");
    let huge = format!(
        "{{\"kind\":\"image\",\"prompt\":\"{}\"}}",
        "x".repeat(300_000)
    );
    let (status, err) = submit(huge, &[]).await;
    assert_eq!(status, 413);
    assert_eq!(err["error"]["code"], "payload_too_large");
    let valid = json!({ "kind": "image", "prompt": "x" }).to_string();
    let (status, _) = app
        .call(Method::POST, "/v1/tasks", None, valid.clone(), &[])
        .await;
    assert_eq!(status, 401);
    let (status, _) = submit(valid.clone(), &[]).await;
    assert_eq!(status, 202);
    let oversized = "x".repeat(200);
    let (status, _) = submit(valid, &[("idempotency-key", &oversized)]).await;
    assert_eq!(status, 400, "oversized Idempotency-Key");
    assert_eq!(
        task::Entity::find().count(&app.platform.db).await.unwrap(),
        1,
        "nothing else was created"
    );
    let balance = conveyor::users::entity::user::Entity::find_by_id(user.id.clone())
        .one(&app.platform.db)
        .await
        .unwrap()
        .unwrap()
        .credits;
    assert_eq!(balance, 96);
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
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
    let id = tasks::submit_id(
        &app,
        &alice,
        json!({ "kind": "copywriting", "prompt": "x" }),
    )
    .await;
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
    let list: Value = app.get_json(&bob, "/v1/tasks").await;
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
        ids.push(
            tasks::submit_id(
                &app,
                &key,
                json!({ "kind": kind, "prompt": format!("p{i}") }),
            )
            .await,
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
    let images: Value = app.get_json(&key, "/v1/tasks?kind=image").await;
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
        tenant_id: String::new(),
        plan: String::new(),
        max_in_flight: 0,
        resume: None,
        metadata: None,
        trace: None,
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
