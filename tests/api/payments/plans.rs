//! Buying a membership changes the buyer's plan at once: kinds, limits and the weight
//! of new tasks; a product may name the plan it grants.

use serde_json::{Value, json};

use super::*;
use crate::helpers::tasks;
use crate::on_every_backend;

on_every_backend!(buying_a_membership_changes_the_plan_at_once);

async fn buying_a_membership_changes_the_plan_at_once(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "payments_plans").await else {
        return;
    };
    with_secret(&mut env);
    crate::plans::with_plans(&mut env);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("buyer", 10_000).await;
    let video = json!({ "kind": "video", "prompt": "waves" });
    let r = tasks::submit(&app, &key, video.clone()).await;
    assert_eq!(r.status(), 403, "free has no video");
    let monthly = intent_for(&app, &key, json!({ "product": "member_monthly" })).await;
    pay(&app, "plan-1", &monthly).await;
    wait_payment(&app, &key, &monthly, "PAID").await;
    // At once: the notice reaches this instance within the fan-out's latency, well
    // under the standing cache's TTL.
    let began = std::time::Instant::now();
    let task: Value = loop {
        let r = tasks::submit(&app, &key, video.clone()).await;
        if r.status() == 202 {
            break r.json().await.unwrap();
        }
        assert!(
            began.elapsed() < std::time::Duration::from_millis(1500),
            "still refused after the payment: {}",
            r.status()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    eprintln!(
        "plan changed {} ms after the payment showed PAID",
        began.elapsed().as_millis()
    );
    assert_eq!(task["plan"], "member", "{task}");
    let v = me(&app, &key).await;
    assert_eq!(v["plan"]["name"], "member", "{v}");
    assert_eq!(v["plan"]["why"], "membership");
    assert_eq!(v["plan"]["weight"], 3);
    assert_eq!(
        v["limits"]["tasks_in_flight"]["limit"], env.settings.limits["tasks_in_flight"],
        "the member plan lifts free's cap"
    );
    done(env, app).await;
}
