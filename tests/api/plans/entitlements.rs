//! What a plan gives and refuses: kinds, upload size, limits; `GET /v1/me` shows it
//! with what is used; an admin's choice of plan applies at once and is audited.

use reqwest::Method;
use serde_json::json;

use super::*;
use crate::helpers::{tasks, videos};
use crate::on_every_backend;

on_every_backend!(a_plan_sets_kinds_uploads_and_limits_and_an_admins_choice_is_audited);

async fn a_plan_sets_kinds_uploads_and_limits_and_an_admins_choice_is_audited(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "plans_entitlements").await else {
        return;
    };
    with_plans(&mut env);
    let app = spawn_app(&env).await;
    let (user, key) = app.user("freeloader", 10_000).await;
    // Free: the plan, its limits, nothing used.
    let v = me(&app, &key).await;
    assert_eq!(v["plan"]["name"], "free", "{v}");
    assert_eq!(v["plan"]["why"], "default");
    assert_eq!(v["plan"]["tenant_id"], user.id.as_str());
    assert_eq!(v["plan"]["kinds"], json!(["copywriting", "image"]));
    assert_eq!(
        v["limits"]["tasks_in_flight"],
        json!({ "limit": 3, "used": 0 })
    );
    assert_eq!(
        v["limits"]["submits_per_sec"]["limit"],
        env.settings.limits["submits_per_sec"]
    );
    // A members-only kind: 403 naming the plan and the plans that have it.
    let r = tasks::submit(&app, &key, json!({ "kind": "video", "prompt": "waves" })).await;
    assert_eq!(r.status(), 403);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "plan_required", "{body}");
    assert_eq!(body["error"]["plan"], "free");
    assert_eq!(body["error"]["plans"], json!(["member", "pro"]));
    // A larger upload than the plan's: 413 from the announced length, before a byte of
    // the body is read (nothing stored).
    let big = crate::media::file_of(crate::media::MP4, 2 * 1024 * 1024);
    let answer = crate::media::head_only_upload(&app, &key, big.len() as u64).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("file_too_large"), "{answer}");
    // The plan's in-flight cap (on RabbitMQ no consumers run here: the tasks stay
    // PENDING; the embedded stack consumes in-process, and a long step keeps them in
    // flight).
    let long = json!({ "kind": "copywriting", "prompt": "x", "params": { "simulate": { "step_ms": 20000 } } });
    for _ in 0..3 {
        let r = tasks::submit(&app, &key, long.clone()).await;
        assert_eq!(r.status(), 202);
    }
    let r = tasks::submit(&app, &key, json!({ "kind": "copywriting", "prompt": "x" })).await;
    assert_eq!(r.status(), 429);
    let v = me(&app, &key).await;
    assert_eq!(
        v["limits"]["tasks_in_flight"],
        json!({ "limit": 3, "used": 3 })
    );
    // The ops console lists the tenant among those with the most work waiting.
    let root = app.admin().await;
    if backend.is_real() {
        wait_until(
            std::time::Duration::from_secs(15),
            "the tenant on the ops board",
            || async {
                let (status, board) = call(&app, &root, Method::GET, "/v1/admin/ops", None).await;
                status == 200
                    && board["panels"].as_array().unwrap().iter().any(|p| {
                        p["tables"].as_array().unwrap().iter().any(|t| {
                            t["title"] == "Most work waiting: tenants by lane"
                                && t["rows"].as_array().unwrap().iter().any(|r| {
                                    r[0] == user.id.as_str()
                                        && r[1] == "free"
                                        && r[2] == "ai.short"
                                        && r[3] == 3
                                })
                        })
                    })
            },
        )
        .await;
    }
    // An unknown plan is refused; a known one applies on the next request.
    let path = format!("/v1/admin/users/{}/plan", user.id);
    let (status, body) =
        admin_json(&app, Method::PUT, &path, Some(json!({ "plan": "gold" }))).await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = admin_json(&app, Method::PUT, &path, Some(json!({ "plan": "pro" }))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["plan"], "pro");
    let v = me(&app, &key).await;
    assert_eq!(
        (&v["plan"]["name"], &v["plan"]["why"]),
        (&json!("pro"), &json!("admin"))
    );
    assert_eq!(v["plan"]["weight"], 8);
    assert_eq!(
        v["limits"]["tasks_in_flight"]["limit"],
        env.settings.limits["tasks_in_flight"]
    );
    let r = tasks::submit(&app, &key, json!({ "kind": "video", "prompt": "waves" })).await;
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap());
    let (status, body) = videos::upload(&app, &key, "video", "big.mp4", big).await;
    assert_eq!(status, 201, "{body}");
    // The task records the plan it was submitted under.
    let r = tasks::submit(&app, &key, json!({ "kind": "copywriting", "prompt": "y" })).await;
    let t: Value = r.json().await.unwrap();
    assert_eq!(t["plan"], "pro", "{t}");
    // Audited, with the plan before; clearing it goes back to free.
    let (status, _) = admin_json(&app, Method::PUT, &path, Some(json!({ "plan": null }))).await;
    assert_eq!(status, 200);
    assert_eq!(me(&app, &key).await["plan"]["name"], "free");
    let trail = conveyor::users::audit::of(&app.platform.db, &format!("user:{}", user.id))
        .await
        .unwrap();
    let sets: Vec<Value> = trail
        .iter()
        .filter(|a| a.action == "plan.set")
        .map(|a| serde_json::from_str(&a.detail).unwrap())
        .collect();
    assert_eq!(
        sets,
        vec![
            json!({ "before": null, "after": "pro" }),
            json!({ "before": "pro", "after": null })
        ]
    );
    assert!(trail.iter().all(|a| a.actor.starts_with("user:")));
    // Not an admin: 403; no such user: 404.
    let (status, _) = call(
        &app,
        &key,
        Method::PUT,
        &path,
        Some(json!({ "plan": "pro" })),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = admin_json(
        &app,
        Method::PUT,
        "/v1/admin/users/nobody/plan",
        Some(json!({ "plan": "pro" })),
    )
    .await;
    assert_eq!(status, 404);
    done(env, app).await;
}
