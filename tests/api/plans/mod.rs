//! Plans that mean something (issue 38): what a plan gives and refuses
//! ([`entitlements`]), organisations as tenants ([`orgs`]) joined by invitation
//! ([`invitations`]), the weighted fair share in
//! a contended lane ([`share`]), a waiting task's place in line ([`line`]). Buying the
//! membership that grants a plan is in `payments::plans`.

mod entitlements;
mod invitations;
mod line;
mod orgs;
mod share;

use conveyor::plans::PlanSettings;
use serde_json::Value;

use crate::helpers::*;

/// `free` limited to the short kinds, 1 MiB uploads and 3 tasks in flight; `member`
/// (what a membership grants) of weight 3; `pro` of weight 8, set by admins.
pub fn with_plans(env: &mut TestEnv) {
    let plans = &mut env.settings.plans;
    plans.clear();
    plans.insert(
        "free".into(),
        PlanSettings {
            kinds: vec!["copywriting".into(), "image".into()],
            upload_max_mib: Some(1),
            limits: [("tasks_in_flight".to_owned(), 3)].into(),
            ..Default::default()
        },
    );
    plans.insert(
        "member".into(),
        PlanSettings {
            weight: 3,
            membership: true,
            ..Default::default()
        },
    );
    plans.insert(
        "pro".into(),
        PlanSettings {
            weight: 8,
            ..Default::default()
        },
    );
}

pub async fn me(app: &TestApp, key: &str) -> Value {
    app.get_json(key, "/v1/me").await
}

/// `method path` as the app's admin with a JSON body: status and body.
pub async fn admin_json(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let root = app.admin().await;
    call(app, &root, method, path, body).await
}

/// `method path` as `key` with a JSON body: status and body.
pub async fn call(
    app: &TestApp,
    key: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = app.client.request(method, app.url(path)).bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}
