//! Tasks found by their metadata and filters, and acted on in bulk: a metadata value finds
//! exactly the tasks submitted with it (an owner's own; an admin's across tenants); a
//! bulk retry by filter counts first, then retries each task once in paced slices; a bulk
//! cancel stops what the filter names.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(tasks_are_found_by_metadata_and_retried_or_canceled_in_bulk);

fn ids(page: &Value) -> BTreeSet<String> {
    page["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{page}"))
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn bulk(app: &TestApp, admin: &str, body: Value) -> Value {
    let r = app
        .client
        .post(app.url("/v1/admin/tasks/bulk"))
        .bearer_auth(admin)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let v: Value = r.json().await.unwrap();
    assert_eq!(status, 200, "{v}");
    v
}

async fn tasks_are_found_by_metadata_and_retried_or_canceled_in_bulk(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "tasks_find").await else {
        return;
    };
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (ada, key) = app.user("ada", 1000).await;
    let (_, bob) = app.user("bob", 1000).await;
    let admin = app.admin().await;
    let submit = |k: &str, meta: Value, params: Value| {
        let (app, k) = (&app, k.to_owned());
        async move {
            tasks::submit_id(
                app,
                &k,
                json!({ "kind": "copywriting", "prompt": "p", "params": params, "metadata": meta }),
            )
            .await
        }
    };
    let mut campaign42 = BTreeSet::new();
    for _ in 0..3 {
        campaign42.insert(submit(&key, json!({ "campaign": "42" }), json!({})).await);
    }
    submit(&key, json!({ "campaign": "7" }), json!({})).await;
    let bobs = submit(&bob, json!({ "campaign": "42" }), json!({})).await;
    // Bad metadata is refused with its field.
    for bad in [
        json!({ "campaign": 42 }),
        json!({ "deep": { "a": "b" } }),
        json!(["x"]),
    ] {
        let r = tasks::submit(
            &app,
            &key,
            json!({ "kind": "copywriting", "prompt": "p", "metadata": bad }),
        )
        .await;
        assert_eq!(r.status(), 422);
        assert_eq!(
            r.json::<Value>().await.unwrap()["error"]["field"],
            "metadata"
        );
    }
    let mine = app
        .get_json(&key, "/v1/tasks?metadata=campaign:42&limit=100")
        .await;
    assert_eq!(ids(&mine), campaign42, "exactly the ones submitted with it");
    assert_eq!(mine["items"][0]["metadata"], json!({ "campaign": "42" }));
    let r = app
        .client
        .get(app.url("/v1/tasks?metadata=nocolon"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = app
        .client
        .get(app.url(&format!("/v1/tasks?user_id={}", ada.id)))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400, "owners find their own");
    let everyone = app
        .get_json(&admin, "/v1/admin/tasks?metadata=campaign:42&limit=100")
        .await;
    let mut all = campaign42.clone();
    all.insert(bobs);
    assert_eq!(ids(&everyone), all);
    let adas = app
        .get_json(
            &admin,
            &format!(
                "/v1/admin/tasks?metadata=campaign:42&user_id={}&limit=100",
                ada.id
            ),
        )
        .await;
    assert_eq!(ids(&adas), campaign42);
    let r = app
        .client
        .get(app.url("/v1/admin/tasks"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);

    // An outage: three tasks failed; a bulk retry of that window counts, then retries
    // each once, in slices.
    let mut failed = BTreeSet::new();
    for _ in 0..3 {
        failed.insert(
            submit(
                &key,
                json!({ "batch": "outage" }),
                json!({ "simulate": { "fail_permanent": true } }),
            )
            .await,
        );
    }
    for id in &failed {
        tasks::wait_status(&app, &key, id, "FAILED").await;
    }
    let now = chrono::Utc::now();
    let until = now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    // MariaDB keeps whole seconds (`timestamp`): a retry made within `until`'s second could
    // be stored at or before it and match the filter. The retries come in the next second.
    wait_until(
        std::time::Duration::from_secs(5),
        "the clock past until's second",
        || async { chrono::Utc::now().timestamp() > now.timestamp() },
    )
    .await;
    let filter = json!({ "metadata": "batch:outage", "until": until, "user_id": ada.id });
    let dry = bulk(
        &app,
        &admin,
        json!({ "action": "retry", "filter": filter, "dry_run": true }),
    )
    .await;
    assert_eq!(
        (dry["matched"].as_u64(), dry["remaining"].as_u64()),
        (Some(3), Some(3)),
        "{dry}"
    );
    assert_eq!(dry["done"], json!([]));
    let first = bulk(
        &app,
        &admin,
        json!({ "action": "retry", "filter": filter, "limit": 2 }),
    )
    .await;
    assert_eq!(
        (first["matched"].as_u64(), first["remaining"].as_u64()),
        (Some(3), Some(1)),
        "{first}"
    );
    let second = bulk(&app, &admin, json!({ "action": "retry", "filter": filter })).await;
    assert_eq!(second["remaining"], 0, "{second}");
    let retried: BTreeSet<String> = [&first, &second]
        .iter()
        .flat_map(|a| a["done"].as_array().unwrap().iter())
        .map(|d| {
            assert_eq!(d["outcome"], "retried", "{d}");
            d["id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(retried, failed, "each once");
    let again = bulk(&app, &admin, json!({ "action": "retry", "filter": filter })).await;
    assert_eq!(
        (
            again["matched"].as_u64(),
            again["done"].as_array().map(Vec::len)
        ),
        (Some(0), Some(0))
    );
    let retries = app
        .get_json(&key, "/v1/tasks?metadata=batch:outage&limit=100")
        .await;
    let linked = retries["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["retry_of"].is_string())
        .count();
    assert_eq!(linked, 3, "{retries}");

    // A bulk cancel of what is still running.
    let mut slow = BTreeSet::new();
    for _ in 0..2 {
        slow.insert(
            submit(
                &key,
                json!({ "batch": "slow" }),
                json!({ "simulate": { "step_ms": 4000 } }),
            )
            .await,
        );
    }
    let cancel = json!({ "action": "cancel", "filter": { "metadata": "batch:slow" } });
    let counted = bulk(
        &app,
        &admin,
        json!({ "action": "cancel", "filter": { "metadata": "batch:slow" }, "dry_run": true }),
    )
    .await;
    assert_eq!(counted["matched"], 2);
    let stopped = bulk(&app, &admin, cancel).await;
    assert_eq!(stopped["remaining"], 0, "{stopped}");
    for id in &slow {
        assert_eq!(tasks::task(&app, &key, id).await["status"], "CANCELED");
    }
    let r = app
        .client
        .post(app.url("/v1/admin/tasks/bulk"))
        .bearer_auth(&admin)
        .json(&json!({ "action": "explode" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    done(env, app).await;
}
