//! Abuse resistance (issue 17): per-tenant rates and in-flight cap, stream caps, key
//! revocation and rotation, admin overrides.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::tasks;
use crate::helpers::{Backend, TestApp, TestEnv, done, spawn_app, wait_until};
use crate::on_every_backend;

on_every_backend!(
    a_flooding_tenant_gets_429s_while_another_is_served,
    the_in_flight_cap_holds_under_50_concurrent_submits,
    a_revoked_key_stops_everywhere_within_a_second_and_its_streams_close,
    a_rotated_key_works_through_the_overlap_then_stops,
    admins_override_a_users_limits_and_are_audited,
    tickets_are_rate_limited_and_the_101st_stream_is_refused,
    a_tenant_beyond_its_running_share_waits_while_another_is_served,
    streams_end_when_their_key_expires_or_is_revoked_unannounced,
    failed_authentication_is_bounded_per_address,
    payment_intents_and_material_writes_have_budgets,
);

async fn submit_ms(app: &TestApp, key: &str) -> (u16, f64, Value, Option<String>) {
    let t = Instant::now();
    let r = tasks::submit(
app,
            key,
            json!({ "kind": "copywriting", "prompt": "x", "params": { "simulate": { "step_ms": 10 } } }),
        )
        .await;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    let status = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, ms, r.json().await.unwrap(), retry)
}

fn p99(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * 0.99) as usize]
}

async fn a_flooding_tenant_gets_429s_while_another_is_served(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "limits_flood").await else {
        return;
    };
    env.settings.limits.insert("submits_per_sec".into(), 20);
    env.settings.limits.insert("submit_burst".into(), 20);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (flood_user, flood) = app.user("flood", 1_000_000).await;
    // The flooder's own budget is small, so what the test measures is the cost of
    // refusing it, not the work it is allowed (which runs in this same process here).
    let budget = conveyor::limits::Overrides(
        [
            ("submits_per_sec".to_owned(), 2),
            ("submit_burst".to_owned(), 2),
        ]
        .into(),
    );
    conveyor::limits::overrides::save(&app.platform.db, &flood_user.id, &budget)
        .await
        .unwrap();
    let (_, small) = app.user("small", 1_000).await;
    // The small tenant alone: 20 submissions, 10 a second.
    let mut alone = Vec::new();
    for _ in 0..20 {
        let (status, ms, body, _) = submit_ms(&app, &small).await;
        assert_eq!(status, 202, "{body}");
        alone.push(ms);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The same while the other tenant floods from 4 connections.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut flooders = Vec::new();
    for _ in 0..4 {
        let (client, url, key, stop) = (
            app.client.clone(),
            app.url("/v1/tasks"),
            flood.clone(),
            stop.clone(),
        );
        flooders.push(tokio::spawn(async move {
            let (mut ok, mut limited) = (0u32, 0u32);
            // 50 a second each: 200 a second in all, a hundred times its rate.
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                tick.tick().await;
                let r = client
                    .post(&url)
                    .bearer_auth(&key)
                    .json(&json!({ "kind": "copywriting", "prompt": "flood", "params": { "simulate": { "step_ms": 10 } } }))
                    .send()
                    .await
                    .unwrap();
                match r.status().as_u16() {
                    202 => ok += 1,
                    429 => {
                        assert!(r.headers().contains_key("retry-after"));
                        let body: Value = r.json().await.unwrap();
                        assert_eq!(body["error"]["code"], "rate_limited", "{body}");
                        limited += 1;
                    }
                    other => panic!("flood answer {other}"),
                }
            }
            (ok, limited)
        }));
    }
    let flood_started = Instant::now();
    let mut during = Vec::new();
    for _ in 0..20 {
        let (status, ms, body, _) = submit_ms(&app, &small).await;
        assert_eq!(
            status, 202,
            "the small tenant is never limited by the flood: {body}"
        );
        during.push(ms);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flood_secs = flood_started.elapsed().as_secs_f64();
    let (mut ok, mut limited) = (0, 0);
    for f in flooders {
        let (o, l) = f.await.unwrap();
        ok += o;
        limited += l;
    }
    let (alone, during) = (p99(alone), p99(during));
    eprintln!(
        "limits_flood {backend:?}: flood {ok} accepted, {limited} refused; small tenant p99 {alone:.1} ms alone, {during:.1} ms during the flood"
    );
    assert!(
        limited > ok,
        "the flood is mostly refused: {ok} accepted, {limited} refused"
    );
    // The burst of 2, then 2 a second (plus the requests in flight at the end).
    let most = 2.0 + 2.0 * (flood_secs + 0.5);
    assert!(
        f64::from(ok) <= most,
        "the flood stays near its rate: {ok} accepted in {flood_secs:.1} s"
    );
    // Loose: the suite shares two cores with other tests (a loaded machine moved the
    // p99 from 43 to 140 ms in one run); starving the small tenant would cost seconds.
    assert!(
        during <= alone * 3.0 + 150.0,
        "the small tenant stays served: p99 {alone:.1} ms alone, {during:.1} ms during the flood"
    );
    done(env, app).await;
}

async fn the_in_flight_cap_holds_under_50_concurrent_submits(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "limits_in_flight").await else {
        return;
    };
    env.settings.limits.insert("tasks_in_flight".into(), 10);
    let app = spawn_app(&env).await;
    let (user, key) = app.user("busy", 1_000).await;
    // Long tasks: whatever starts stays in flight for the whole test.
    let body =
        json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "step_ms": 20000 } } });
    let answers = futures::future::join_all((0..50).map(|_| {
        let (client, url, key, body) = (
            app.client.clone(),
            app.url("/v1/tasks"),
            key.clone(),
            body.clone(),
        );
        async move {
            let r = client
                .post(url)
                .bearer_auth(key)
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap())
        }
    }))
    .await;
    let accepted = answers.iter().filter(|(s, _)| *s == 202).count();
    let refused: Vec<_> = answers.iter().filter(|(s, _)| *s == 429).collect();
    assert_eq!(accepted, 10, "{answers:?}");
    assert_eq!(refused.len(), 40, "{answers:?}");
    assert!(
        refused
            .iter()
            .all(|(_, b)| b["error"]["code"] == "too_many_tasks_in_flight")
    );
    // Only the accepted ones were charged (image costs 4).
    assert_eq!(app.credits(&user.id).await, 1_000 - 40);
    let listed = app.get_json(&key, "/v1/tasks?limit=100").await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 10, "{listed}");
    // Cancelling one frees a slot.
    let id = listed["items"][0]["id"].as_str().unwrap();
    let r = app
        .client
        .post(app.url(&format!("/v1/tasks/{id}/cancel")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(tasks::submit(&app, &key, body.clone()).await.status(), 202);
    assert_eq!(tasks::submit(&app, &key, body).await.status(), 429);
    done(env, app).await;
}

async fn key_id(app: &TestApp, admin: &str, user_id: &str) -> String {
    let keys = app
        .get_json(admin, &format!("/v1/admin/users/{user_id}/keys"))
        .await;
    keys[0]["id"].as_str().unwrap().to_owned()
}

async fn me_status(app: &TestApp, key: &str) -> u16 {
    app.client
        .get(app.url("/v1/me"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn a_revoked_key_stops_everywhere_within_a_second_and_its_streams_close(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "limits_revoke").await else {
        return;
    };
    let app = spawn_app(&env).await;
    app.start_consumers();
    // A second instance on the same services (the embedded broker lives in one process:
    // there the one instance plays both parts).
    let second = if backend.is_real() {
        Some(spawn_app(&env).await)
    } else {
        None
    };
    let other = second.as_ref().unwrap_or(&app);
    let root = app.admin().await;
    let (user, key) = app.user("leaver", 100).await;
    // The other instance knows the key (cached), and has a socket and a stream open with it.
    assert_eq!(me_status(other, &key).await, 200);
    let mut ws = crate::live::connect(other, &key).await;
    crate::live::send(&mut ws, json!({ "op": "subscribe", "all": true })).await;
    let id = tasks::submit_id(
        &app,
        &key,
        json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "step_ms": 20000 } } }),
    )
    .await;
    let sse = other
        .client
        .get(other.url(&format!("/v1/tasks/{id}/events")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status(), 200);
    let mut sse = sse;
    let first = sse.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("snapshot"));

    // A ticket stockpiled before the revocation must not open a socket after it.
    let spare: Value = other
        .client
        .post(other.url("/v1/ws-tickets"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let kid = key_id(&app, &root, &user.id).await;
    let revoked_at = Instant::now();
    let r = app
        .client
        .post(app.url(&format!("/v1/admin/users/{}/keys/{kid}/revoke", user.id)))
        .bearer_auth(&root)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let info: Value = r.json().await.unwrap();
    assert!(info["revoked_at"].is_string(), "{info}");
    // Refused on the other instance within a second, though it had the key cached.
    while me_status(other, &key).await != 401 {
        assert!(
            revoked_at.elapsed() < Duration::from_secs(1),
            "still accepted after 1 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused_after = revoked_at.elapsed();
    // The socket is closed with a policy-violation frame, the SSE stream ends.
    let closed = loop {
        match tokio::time::timeout(Duration::from_secs(1), ws.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => break frame,
            Ok(Some(Ok(_))) => continue,
            other => panic!("no close frame within 1 s: {other:?}"),
        }
    };
    let frame = closed.unwrap();
    assert_eq!(u16::from(frame.code), 1008);
    assert_eq!(frame.reason.as_str(), "API key revoked");
    let ended = tokio::time::timeout(Duration::from_secs(1), async {
        while let Ok(Some(_)) = sse.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "the SSE stream ends within 1 s");
    let late = tokio_tungstenite::connect_async(format!(
        "ws://{}/v1/ws?ticket={}",
        other.addr,
        spare["ticket"].as_str().unwrap()
    ))
    .await;
    assert!(late.is_err(), "a ticket of a revoked key opened a socket");
    eprintln!("limits_revoke {backend:?}: refused on the other instance after {refused_after:?}");
    // Audited.
    let trail = conveyor::users::audit::of(&app.platform.db, &format!("user:{}", user.id))
        .await
        .unwrap();
    assert!(
        trail
            .iter()
            .any(|a| a.action == "key.revoke" && a.detail.contains(&kid))
    );
    if let Some(s) = second {
        s.stop().await;
    }
    done(env, app).await;
}

async fn a_rotated_key_works_through_the_overlap_then_stops(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "limits_rotate").await else {
        return;
    };
    env.settings.auth.key_rotation_overlap_secs = 2;
    let app = spawn_app(&env).await;
    let root = app.admin().await;
    let (user, old) = app.user("rotator", 100).await;
    assert_eq!(me_status(&app, &old).await, 200);
    let kid = key_id(&app, &root, &user.id).await;
    let rotated_at = Instant::now();
    let r = app
        .client
        .post(app.url(&format!("/v1/admin/users/{}/keys/{kid}/rotate", user.id)))
        .bearer_auth(&root)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let rotated: Value = r.json().await.unwrap();
    let new = rotated["key"].as_str().unwrap();
    assert!(rotated["old"]["expires_at"].is_string(), "{rotated}");
    // Both work during the overlap, the new one after it; the old one is refused after,
    // even though this instance cached it.
    assert_eq!(me_status(&app, &old).await, 200);
    assert_eq!(me_status(&app, new).await, 200);
    wait_until(Duration::from_secs(10), "the old key refused", || async {
        me_status(&app, &old).await == 401
    })
    .await;
    // Not before the overlap (2 s, stored to the second).
    assert!(rotated_at.elapsed() >= Duration::from_secs(1), "{rotated}");
    assert_eq!(me_status(&app, new).await, 200);
    // An expired key cannot be rotated again; unknown ones are 404.
    let again = app
        .client
        .post(app.url(&format!("/v1/admin/users/{}/keys/{kid}/rotate", user.id)))
        .bearer_auth(&root)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 404);
    let keys = app
        .get_json(&root, &format!("/v1/admin/users/{}/keys", user.id))
        .await;
    assert_eq!(keys.as_array().unwrap().len(), 2, "{keys}");
    done(env, app).await;
}

async fn admins_override_a_users_limits_and_are_audited(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "limits_override").await else {
        return;
    };
    let app = spawn_app(&env).await;
    let root = app.admin().await;
    let (user, key) = app.user("throttled", 1_000).await;
    let url = app.url(&format!("/v1/admin/users/{}/limits", user.id));
    // Users cannot set limits; unknown limits and bad values are 422 naming the problem.
    let r = app
        .client
        .put(&url)
        .bearer_auth(&key)
        .json(&json!({ "submits_per_sec": 1000 }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    for bad in [
        json!({ "submits_per_second": 1 }),
        json!({ "submits_per_sec": -1 }),
        json!({ "submit_burst": 2_147_483_648u64 }),
    ] {
        let r = app
            .client
            .put(&url)
            .bearer_auth(&root)
            .json(&bad)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422, "{bad}");
        let body: Value = r.json().await.unwrap();
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    let r = app
        .client
        .put(&url)
        .bearer_auth(&root)
        .json(&json!({ "submits_per_sec": 1, "submit_burst": 1 }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let view: Value = r.json().await.unwrap();
    assert_eq!(view["effective"]["submits_per_sec"], 1, "{view}");
    assert_eq!(
        view["overrides"],
        json!({ "submits_per_sec": 1, "submit_burst": 1 })
    );
    assert_eq!(
        view["configured"]["submits_per_sec"],
        env.settings.limits["submits_per_sec"]
    );
    let (first, ..) = submit_ms(&app, &key).await;
    let (second, _, body, retry) = submit_ms(&app, &key).await;
    assert_eq!((first, second), (202, 429), "{body}");
    assert_eq!(body["error"]["code"], "rate_limited");
    assert_eq!(retry.as_deref(), Some("1"));
    let r = app
        .client
        .get(app.url("/v1/admin/users/nobody/limits"))
        .bearer_auth(&root)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let trail = conveyor::users::audit::of(&app.platform.db, &format!("user:{}", user.id))
        .await
        .unwrap();
    assert_eq!(trail.len(), 1);
    assert_eq!(trail[0].action, "limits.set");
    assert!(trail[0].actor.starts_with("user:"));
    done(env, app).await;
}

async fn tickets_are_rate_limited_and_the_101st_stream_is_refused(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "limits_streams").await else {
        return;
    };
    env.settings.limits.insert("tickets_per_min".into(), 3);
    env.settings.limits.insert("streams_per_user".into(), 100);
    let app = spawn_app(&env).await;
    let (_, key) = app.user("watcher", 100).await;
    for n in 0..4 {
        let r = app
            .client
            .post(app.url("/v1/ws-tickets"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status().as_u16(),
            if n < 3 { 201 } else { 429 },
            "ticket {n}"
        );
    }
    let id = tasks::submit_id(
        &app,
        &key,
        json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "step_ms": 20000 } } }),
    )
    .await;
    let open = |app: &TestApp| {
        app.client
            .get(app.url(&format!("/v1/tasks/{id}/events")))
            .bearer_auth(&key)
            .send()
    };
    let mut streams = Vec::new();
    for n in 0..100 {
        let r = open(&app).await.unwrap();
        assert_eq!(r.status(), 200, "stream {n}");
        streams.push(r);
    }
    let r = open(&app).await.unwrap();
    assert_eq!(r.status(), 429);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_many_streams", "{body}");
    // Closing one gives its slot back.
    drop(streams.pop());
    let mut reopened = false;
    for _ in 0..50 {
        if open(&app).await.unwrap().status() == 200 {
            reopened = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(reopened, "a closed stream's slot comes back");
    drop(streams);
    done(env, app).await;
}

/// Fair share at claim time: a tenant with a backlog runs at most `tasks_running` tasks at
/// once; the rest are deferred (no attempt counted) and another tenant's task is not
/// stuck behind them.
async fn a_tenant_beyond_its_running_share_waits_while_another_is_served(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "limits_fair_share").await else {
        return;
    };
    env.settings.limits.insert("tasks_running".into(), 2);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (big, big_key) = app.user("big", 1_000).await;
    let (_, small_key) = app.user("small", 1_000).await;
    let body =
        json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "step_ms": 1500 } } });
    let mut backlog = Vec::new();
    for _ in 0..6 {
        backlog.push(tasks::submit_id(&app, &big_key, body.clone()).await);
    }
    // The big tenant has claimed its share before the small one arrives.
    crate::helpers::wait_until(
        Duration::from_secs(10),
        "the big tenant at its share",
        || async {
            conveyor::domains::ai_tasks::store::running_by_tenant(&app.platform.db, "ai.short")
                .await
                .unwrap()
                .get(&big.id)
                .copied()
                .unwrap_or(0)
                == 2
        },
    )
    .await;
    let small = tasks::submit_id(
        &app,
        &small_key,
        json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "step_ms": 200 } } }),
    )
    .await;
    // The small tenant's task ends while the big one's backlog is still there, and the
    // big one never runs more than its share.
    let started = Instant::now();
    let mut most_running = 0;
    loop {
        let running =
            conveyor::domains::ai_tasks::store::running_by_tenant(&app.platform.db, "ai.short")
                .await
                .unwrap()
                .get(&big.id)
                .copied()
                .unwrap_or(0);
        most_running = most_running.max(running);
        let s = tasks::task(&app, &small_key, &small).await;
        if s["status"] == "SUCCESS" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the small tenant waited: {s}"
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let small_took = started.elapsed();
    let mut left = 0;
    for id in &backlog {
        if tasks::task(&app, &big_key, id).await["status"] != "SUCCESS" {
            left += 1;
        }
    }
    assert!(
        left >= 2,
        "the backlog was still running when the small task ended ({left} left)"
    );
    assert!(
        most_running <= 2,
        "the big tenant ran {most_running} at once"
    );
    // Every backlog task ends, each in one attempt (a deferral is not a failure).
    for id in &backlog {
        let t = tasks::wait_status(&app, &big_key, id, "SUCCESS").await;
        assert_eq!(t["attempts"], 1, "{t}");
    }
    eprintln!(
        "limits_fair_share {backend:?}: the small tenant's task ended {small_took:?} after submission behind a backlog of 6"
    );
    done(env, app).await;
}

/// An open stream checks its key (every `live.key_check_secs` and at the key's expiry):
/// it ends when a rotated key's overlap ends, and when its key was revoked by a process
/// whose notice never arrived (the CLI on the embedded stack).
async fn streams_end_when_their_key_expires_or_is_revoked_unannounced(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "limits_stream_key").await else {
        return;
    };
    env.settings.auth.key_rotation_overlap_secs = 2;
    env.settings.live.key_check_secs = 1;
    let app = spawn_app(&env).await;
    app.start_consumers();
    let root = app.admin().await;
    let (user, key) = app.user("streamer", 100).await;
    let kid = key_id(&app, &root, &user.id).await;
    let id = tasks::submit_id(
        &app,
        &key,
        json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "step_ms": 20000 } } }),
    )
    .await;
    let open_sse = |key: String| {
        let (client, url) = (
            app.client.clone(),
            app.url(&format!("/v1/tasks/{id}/events")),
        );
        async move {
            let mut r = client.get(url).bearer_auth(key).send().await.unwrap();
            assert_eq!(r.status(), 200);
            assert!(
                String::from_utf8_lossy(&r.chunk().await.unwrap().unwrap()).contains("snapshot")
            );
            r
        }
    };
    let mut ws = crate::live::connect(&app, &key).await;
    let mut sse = open_sse(key.clone()).await;
    // Rotated: the old key works 2 s more, then its streams end (within a check).
    let rotated_at = Instant::now();
    let r = app
        .client
        .post(app.url(&format!("/v1/admin/users/{}/keys/{kid}/rotate", user.id)))
        .bearer_auth(&root)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let new_key = r.json::<Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let frame = loop {
        match tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => break frame.unwrap(),
            Ok(Some(Ok(_))) => continue,
            other => panic!("no close frame within 5 s: {other:?}"),
        }
    };
    let closed_after = rotated_at.elapsed();
    assert_eq!(u16::from(frame.code), 1008);
    assert_eq!(frame.reason.as_str(), "API key expired or revoked");
    assert!(
        // MariaDB keeps whole seconds: the expiry may land up to 1 s early.
        closed_after >= Duration::from_millis(900) && closed_after < Duration::from_secs(4),
        "closed {closed_after:?} after the rotation (overlap 2 s)"
    );
    let ended = tokio::time::timeout(Duration::from_secs(3), async {
        while let Ok(Some(_)) = sse.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "the SSE stream of the expired key ends");
    // Revoked in the database by a process that tells nobody: ended within a check.
    let mut ws = crate::live::connect(&app, &new_key).await;
    let mut sse = open_sse(new_key.clone()).await;
    let new_kid = app
        .get_json(&root, &format!("/v1/admin/users/{}/keys", user.id))
        .await
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["revoked_at"].is_null() && k["expires_at"].is_null())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let revoked_at = Instant::now();
    conveyor::account::keys::revoke(&app.platform.db, None, "test", &user.id, &new_kid)
        .await
        .unwrap();
    let frame = loop {
        match tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => break frame.unwrap(),
            Ok(Some(Ok(_))) => continue,
            other => panic!("no close frame within 5 s: {other:?}"),
        }
    };
    assert_eq!(frame.reason.as_str(), "API key expired or revoked");
    let ended = tokio::time::timeout(Duration::from_secs(3), async {
        while let Ok(Some(_)) = sse.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "the SSE stream of the revoked key ends");
    eprintln!(
        "limits_stream_key {backend:?}: expired stream closed after {closed_after:?}, unannounced revocation after {:?}",
        revoked_at.elapsed()
    );
    done(env, app).await;
}

/// Requests with invalid keys cost one lookup each only up to the address's budget:
/// then the address is answered 429 (no lookups) until its minute ends; a key that just
/// failed is refused again without a lookup.
async fn failed_authentication_is_bounded_per_address(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "limits_failed_auth").await else {
        return;
    };
    env.settings.auth.failed_per_minute = 5;
    let app = spawn_app(&env).await;
    let (_, good) = app.user("known", 0).await;
    // Known and cached before the attack: keeps working from the same address.
    assert_eq!(me_status(&app, &good).await, 200);
    for i in 0..5 {
        let status = me_status(&app, &format!("cvk_random_{i:040}")).await;
        assert_eq!(status, 401, "attempt {i}");
    }
    let r = app
        .client
        .get(app.url("/v1/me"))
        .bearer_auth("cvk_random_and_blocked")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert!(r.headers().get("retry-after").is_some());
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_many_failed_authentications");
    assert_eq!(me_status(&app, &good).await, 200, "a known key still works");
    done(env, app).await;
}

/// Payment intents: a rate per minute and a cap on unpaid ones, which expire (and still
/// grant when paid late); material edits and deletes: a rate per minute.
async fn payment_intents_and_material_writes_have_budgets(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "limits_writes").await else {
        return;
    };
    env.settings.limits.insert("payments_per_min".into(), 4);
    env.settings.limits.insert("open_payments".into(), 2);
    env.settings
        .limits
        .insert("material_writes_per_min".into(), 2);
    env.settings.sections.get_mut("payments").unwrap()["intent_ttl_secs"] = json!(2);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("buyer", 0).await;
    let create = || async {
        let r = app
            .client
            .post(app.url("/v1/payments"))
            .bearer_auth(&key)
            .json(&json!({ "product": "credits_100" }))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json::<Value>().await.unwrap())
    };
    let (s1, first) = create().await;
    let (s2, _) = create().await;
    let (s3, refused) = create().await;
    assert_eq!((s1, s2, s3), (201, 201, 429), "{refused}");
    assert_eq!(refused["error"]["code"], "too_many_open_payments");
    // Unpaid intents expire (intent_ttl_secs 2): room again.
    let id = first["id"].as_str().unwrap().to_owned();
    crate::helpers::wait_until(Duration::from_secs(15), "intents expired", || async {
        app.get_json(&key, &format!("/v1/payments/{id}")).await["status"] == "EXPIRED"
    })
    .await;
    let (s4, _) = create().await;
    assert_eq!(s4, 201);
    // The fifth intent this minute is over the rate.
    let (s5, body) = create().await;
    assert_eq!(s5, 429, "{body}");
    assert_eq!(body["error"]["code"], "rate_limited");
    // Materials: two writes a minute, the third refused (edit or delete alike).
    let (user, key) = app.user("editor", 0).await;
    let material = conveyor::domains::search_sync::store::create(
        &app.platform.db,
        conveyor::domains::search_sync::store::NewMaterial {
            user_id: user.id.clone(),
            task_id: uuid::Uuid::now_v7().to_string(),
            kind: "copywriting".into(),
            title: "spring tea".into(),
            content: "green tea".into(),
            vectors: None,
        },
    )
    .await
    .unwrap();
    let path = app.url(&format!("/v1/materials/{}", material.id));
    let mut statuses = Vec::new();
    for title in ["one", "two", "three"] {
        let r = app
            .client
            .patch(&path)
            .bearer_auth(&key)
            .json(&json!({ "title": title }))
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
    }
    let r = app
        .client
        .delete(&path)
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    statuses.push(r.status().as_u16());
    assert_eq!(statuses, [200, 200, 429, 429]);
    done(env, app).await;
}
