//! Organisations: members share the organisation's plan and limits (counted together);
//! admins create them and set their plan; the owner invites (the user accepts) and
//! removes members; all of it audited. The invitations' own rules: `invitations`.

use reqwest::Method;
use serde_json::json;

use super::*;
use crate::helpers::tasks;
use crate::on_every_backend;

on_every_backend!(an_organisation_shares_its_plan_and_limits_and_its_owner_manages_members);

async fn an_organisation_shares_its_plan_and_limits_and_its_owner_manages_members(
    backend: Backend,
) {
    let Some(mut env) = TestEnv::new(backend, "plans_orgs").await else {
        return;
    };
    with_plans(&mut env);
    let app = spawn_app(&env).await;
    let (owner, owner_key) = app.user("owner", 10_000).await;
    let (mate, mate_key) = app.user("mate", 10_000).await;
    let (other, other_key) = app.user("other", 10_000).await;
    // Blank names and unknown owners are refused.
    let (status, _) = admin_json(
        &app,
        Method::POST,
        "/v1/admin/orgs",
        Some(json!({ "name": " ", "owner": owner.id })),
    )
    .await;
    assert_eq!(status, 422);
    let (status, _) = admin_json(
        &app,
        Method::POST,
        "/v1/admin/orgs",
        Some(json!({ "name": "Team", "owner": "nobody" })),
    )
    .await;
    assert_eq!(status, 404);
    let (status, org) = admin_json(
        &app,
        Method::POST,
        "/v1/admin/orgs",
        Some(json!({ "name": "Team", "owner": owner.id })),
    )
    .await;
    assert_eq!(status, 201, "{org}");
    let org_id = org["id"].as_str().unwrap().to_owned();
    assert_eq!(org["members"].as_array().unwrap().len(), 1);
    // The owner invites a member, who accepts; a member who does not own it cannot.
    let (status, inv) = add(&app, &owner_key, &mate.id).await;
    assert_eq!(status, 202, "{inv}");
    let (status, view) = call(
        &app,
        &mate_key,
        Method::POST,
        &format!("/v1/me/invitations/{}/accept", inv["id"].as_str().unwrap()),
        None,
    )
    .await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["members"].as_array().unwrap().len(), 2);
    let (status, _) = add(&app, &mate_key, &other.id).await;
    assert_eq!(status, 403);
    let (status, _) = add(&app, &other_key, &mate.id).await;
    assert_eq!(status, 404, "the other user belongs to no organisation");
    // Every member sees it and stands on its plan, counted as it.
    let (status, mine) = call(&app, &mate_key, Method::GET, "/v1/org", None).await;
    assert_eq!((status, mine["id"].as_str()), (200, Some(org_id.as_str())));
    let v = me(&app, &mate_key).await;
    assert_eq!(v["plan"]["why"], "organisation", "{v}");
    assert_eq!(v["plan"]["tenant_id"], org_id.as_str());
    assert_eq!(v["plan"]["name"], "free");
    // Limits count for the whole organisation: three in flight between the two.
    for key in [&owner_key, &mate_key, &owner_key] {
        let r = tasks::submit(&app, key, json!({ "kind": "copywriting", "prompt": "x" })).await;
        assert_eq!(r.status(), 202);
    }
    let r = tasks::submit(
        &app,
        &mate_key,
        json!({ "kind": "copywriting", "prompt": "x" }),
    )
    .await;
    assert_eq!(r.status(), 429, "the organisation holds its three");
    assert_eq!(
        me(&app, &owner_key).await["limits"]["tasks_in_flight"]["used"],
        3
    );
    // An admin's plan for the organisation is every member's at once.
    let (status, view) = admin_json(
        &app,
        Method::PUT,
        &format!("/v1/admin/orgs/{org_id}/plan"),
        Some(json!({ "plan": "pro" })),
    )
    .await;
    assert_eq!((status, &view["plan"]), (200, &json!("pro")), "{view}");
    assert_eq!(me(&app, &mate_key).await["plan"]["name"], "pro");
    let r = tasks::submit(
        &app,
        &mate_key,
        json!({ "kind": "video", "prompt": "waves" }),
    )
    .await;
    assert_eq!(r.status(), 202);
    // A member of one organisation cannot join another; the owner cannot leave.
    let (status, other_org) = admin_json(
        &app,
        Method::POST,
        "/v1/admin/orgs",
        Some(json!({ "name": "Other", "owner": other.id })),
    )
    .await;
    assert_eq!(status, 201);
    let (status, body) = admin_json(
        &app,
        Method::POST,
        &format!(
            "/v1/admin/orgs/{}/members",
            other_org["id"].as_str().unwrap()
        ),
        Some(json!({ "user_id": mate.id })),
    )
    .await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (409, &json!("in_another_org"))
    );
    let (status, body) = call(
        &app,
        &owner_key,
        Method::DELETE,
        &format!("/v1/org/members/{}", owner.id),
        None,
    )
    .await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (409, &json!("owner_cannot_leave"))
    );
    // An admin's override for a member is the organisation's: every member has it.
    let (status, body) = admin_json(
        &app,
        Method::PUT,
        &format!("/v1/admin/users/{}/limits", mate.id),
        Some(json!({ "tasks_in_flight": 5 })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tenant_id"], org_id.as_str());
    assert_eq!(
        me(&app, &owner_key).await["limits"]["tasks_in_flight"]["limit"],
        5
    );
    // Someone outside cannot remove the mate; the mate may leave.
    let (status, _) = call(
        &app,
        &other_key,
        Method::DELETE,
        &format!("/v1/org/members/{}", mate.id),
        None,
    )
    .await;
    assert_eq!(status, 404, "not a member of the caller's organisation");
    let (status, _) = call(
        &app,
        &mate_key,
        Method::DELETE,
        &format!("/v1/org/members/{}", mate.id),
        None,
    )
    .await;
    assert_eq!(status, 200);
    // Gone, the member stands alone again: its own plan, its own count.
    let v = me(&app, &mate_key).await;
    assert_eq!(
        (&v["plan"]["name"], &v["plan"]["why"]),
        (&json!("free"), &json!("default"))
    );
    assert_eq!(v["plan"]["tenant_id"], mate.id.as_str());
    let (status, _) = call(&app, &mate_key, Method::GET, "/v1/org", None).await;
    assert_eq!(status, 404);
    let trail = conveyor::users::audit::of(&app.platform.db, &format!("org:{org_id}"))
        .await
        .unwrap();
    let actions: Vec<&str> = trail.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "org.create",
            "org.invite",
            "org.add_member",
            "plan.set",
            "limits.set",
            "org.remove_member"
        ]
    );
    assert_eq!(
        trail[2].actor,
        format!("user:{}", mate.id),
        "the mate accepted"
    );
    assert_eq!(trail[5].actor, format!("user:{}", mate.id), "the mate left");
    done(env, app).await;
}

/// `POST /v1/org/members` as `key`.
async fn add(app: &TestApp, key: &str, user: &str) -> (u16, Value) {
    call(
        app,
        key,
        Method::POST,
        "/v1/org/members",
        Some(json!({ "user_id": user })),
    )
    .await
}
