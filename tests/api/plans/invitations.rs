//! Invitations (issue 55): an owner naming a user id invites them, nothing more; the
//! user joins by accepting (no one else can), not after the invitation expired or was
//! revoked; a member who bought a heavier plan keeps it in the organisation.

use reqwest::Method;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, TransactionTrait};
use serde_json::json;

use super::*;
use crate::helpers::tasks;
use crate::on_every_backend;

on_every_backend!(an_owners_add_is_an_invitation_only_the_invited_user_can_accept);

async fn an_owners_add_is_an_invitation_only_the_invited_user_can_accept(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "plans_invitations").await else {
        return;
    };
    with_plans(&mut env);
    let app = spawn_app(&env).await;
    let (owner, owner_key) = app.user("owner", 10_000).await;
    let (mate, mate_key) = app.user("mate", 10_000).await;
    let (stranger, stranger_key) = app.user("stranger", 10_000).await;
    let (late, late_key) = app.user("late", 10_000).await;
    let (payer, payer_key) = app.user("payer", 10_000).await;
    let (status, org) = admin_json(
        &app,
        Method::POST,
        "/v1/admin/orgs",
        Some(json!({ "name": "Team", "owner": owner.id })),
    )
    .await;
    assert_eq!(status, 201, "{org}");
    let org_id = org["id"].as_str().unwrap().to_owned();

    // The owner's add is an invitation: the mate is not a member and stands alone.
    let (status, inv) = invite(&app, &owner_key, &mate.id).await;
    assert_eq!(status, 202, "{inv}");
    assert_eq!(
        (&inv["status"], &inv["user_id"], &inv["org_name"]),
        (&json!("pending"), &json!(mate.id), &json!("Team"))
    );
    let id = inv["id"].as_str().unwrap().to_owned();
    let expires: chrono::DateTime<chrono::Utc> =
        inv["expires_at"].as_str().unwrap().parse().unwrap();
    let hours = (expires - chrono::Utc::now()).num_hours();
    assert!(
        (167..=168).contains(&hours),
        "expires in {hours} hours, not 7 days"
    );
    assert_refused(
        call(&app, &mate_key, Method::GET, "/v1/org", None).await,
        404,
        "not_found",
    );
    assert_eq!(
        me(&app, &mate_key).await["plan"]["tenant_id"],
        mate.id.as_str()
    );
    let (_, view) = call(&app, &owner_key, Method::GET, "/v1/org", None).await;
    assert_eq!(view["members"].as_array().unwrap().len(), 1, "{view}");
    // Asked again, the same open invitation; the owner lists it.
    let (status, again) = invite(&app, &owner_key, &mate.id).await;
    assert_eq!((status, &again["id"]), (202, &json!(id)));
    let (status, open) = call(&app, &owner_key, Method::GET, "/v1/org/invitations", None).await;
    assert_eq!(status, 200);
    assert_eq!(ids(&open), [id.as_str()]);
    // Refusals: an unknown user, a member already, a caller who owns nothing.
    assert_refused(invite(&app, &owner_key, "nobody").await, 404, "not_found");
    assert_refused(
        invite(&app, &owner_key, &owner.id).await,
        409,
        "already_member",
    );
    assert_refused(
        invite(&app, &stranger_key, &mate.id).await,
        404,
        "not_found",
    );

    // Only the invited user sees it and can answer it.
    let (_, theirs) = call(&app, &mate_key, Method::GET, "/v1/me/invitations", None).await;
    assert_eq!(ids(&theirs), [id.as_str()]);
    let (_, none) = call(&app, &stranger_key, Method::GET, "/v1/me/invitations", None).await;
    assert_eq!(none, json!([]));
    for key in [&stranger_key, &owner_key] {
        for answer in ["accept", "decline"] {
            assert_refused(answer_as(&app, key, &id, answer).await, 404, "not_found");
        }
    }
    assert_refused(
        call(
            &app,
            &mate_key,
            Method::POST,
            "/v1/me/invitations/nope/accept",
            None,
        )
        .await,
        404,
        "not_found",
    );
    // The mate accepts: a member now, on the organisation's plan and count.
    let (status, view) = answer_as(&app, &mate_key, &id, "accept").await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["members"].as_array().unwrap().len(), 2, "{view}");
    let v = me(&app, &mate_key).await;
    assert_eq!(
        (&v["plan"]["why"], &v["plan"]["tenant_id"]),
        (&json!("organisation"), &json!(org_id))
    );
    assert_refused(
        answer_as(&app, &mate_key, &id, "accept").await,
        409,
        "invitation_answered",
    );
    // A member who does not own the organisation invites and revokes nothing.
    assert_refused(
        invite(&app, &mate_key, &stranger.id).await,
        403,
        "forbidden",
    );

    // Revoked, an invitation cannot be accepted; only the owner revokes.
    let (_, inv) = invite(&app, &owner_key, &stranger.id).await;
    let revoked = inv["id"].as_str().unwrap().to_owned();
    assert_refused(revoke(&app, &mate_key, &revoked).await, 403, "forbidden");
    assert_refused(
        revoke(&app, &stranger_key, &revoked).await,
        404,
        "not_found",
    );
    let (status, body) = revoke(&app, &owner_key, &revoked).await;
    assert_eq!(
        (status, &body["status"]),
        (200, &json!("revoked")),
        "{body}"
    );
    assert_refused(
        answer_as(&app, &stranger_key, &revoked, "accept").await,
        409,
        "invitation_revoked",
    );
    assert_refused(
        revoke(&app, &owner_key, &revoked).await,
        409,
        "invitation_revoked",
    );
    assert_refused(
        call(&app, &stranger_key, Method::GET, "/v1/org", None).await,
        404,
        "not_found",
    );

    // Expired, neither: it leaves the lists, and the owner may send a new one.
    let (_, inv) = invite(&app, &owner_key, &late.id).await;
    let expired = inv["id"].as_str().unwrap().to_owned();
    let db = &app.platform.db;
    conveyor::users::invitations::entity::Entity::update_many()
        .col_expr(
            conveyor::users::invitations::entity::Column::ExpiresAt,
            Expr::value(conveyor::db::utc_value(
                db,
                chrono::Utc::now() - chrono::Duration::seconds(1),
            )),
        )
        .filter(conveyor::users::invitations::entity::Column::Id.eq(expired.as_str()))
        .exec(db)
        .await
        .unwrap();
    assert_refused(
        answer_as(&app, &late_key, &expired, "accept").await,
        409,
        "invitation_expired",
    );
    let (_, none) = call(&app, &late_key, Method::GET, "/v1/me/invitations", None).await;
    assert_eq!(none, json!([]));
    assert_eq!(
        me(&app, &late_key).await["plan"]["tenant_id"],
        late.id.as_str()
    );
    let (status, fresh) = invite(&app, &owner_key, &late.id).await;
    assert_eq!(status, 202);
    assert_ne!(fresh["id"], json!(expired), "a new invitation");
    // Declined, it is answered: no acceptance after.
    let fresh = fresh["id"].as_str().unwrap().to_owned();
    let (status, body) = answer_as(&app, &late_key, &fresh, "decline").await;
    assert_eq!(
        (status, &body["status"]),
        (200, &json!("declined")),
        "{body}"
    );
    assert_refused(
        answer_as(&app, &late_key, &fresh, "accept").await,
        409,
        "invitation_answered",
    );

    // A member of another organisation leaves it before joining (the invitation itself
    // says nothing about where the user belongs).
    let (status, _) = admin_json(
        &app,
        Method::POST,
        "/v1/admin/orgs",
        Some(json!({ "name": "Other", "owner": stranger.id })),
    )
    .await;
    assert_eq!(status, 201);
    let (status, inv) = invite(&app, &owner_key, &stranger.id).await;
    assert_eq!(status, 202, "{inv}");
    assert_refused(
        answer_as(&app, &stranger_key, inv["id"].as_str().unwrap(), "accept").await,
        409,
        "in_another_org",
    );

    // A paying member keeps the plan they bought: the organisation's (free) weighs less.
    let txn = db.begin().await.unwrap();
    let row = conveyor::users::lock(&txn, &payer.id).await.unwrap();
    conveyor::users::membership::extend(
        &txn,
        &row,
        1,
        None,
        &format!("membership:test:{}", payer.id),
    )
    .await
    .unwrap();
    txn.commit().await.unwrap();
    assert_eq!(me(&app, &payer_key).await["plan"]["name"], "member");
    let (_, inv) = invite(&app, &owner_key, &payer.id).await;
    assert_eq!(
        me(&app, &payer_key).await["plan"]["name"],
        "member",
        "invited, not moved"
    );
    let (status, view) = answer_as(&app, &payer_key, inv["id"].as_str().unwrap(), "accept").await;
    assert_eq!((status, &view["plan"]), (200, &json!("free")), "{view}");
    let v = me(&app, &payer_key).await;
    assert_eq!(
        (
            &v["plan"]["name"],
            &v["plan"]["why"],
            &v["plan"]["tenant_id"]
        ),
        (&json!("member"), &json!("membership"), &json!(org_id)),
        "a member on their own plan, counted with the organisation: {v}"
    );
    let r = tasks::submit(
        &app,
        &payer_key,
        json!({ "kind": "video", "prompt": "waves" }),
    )
    .await;
    assert_eq!(r.status(), 202, "the bought plan's kinds");
    assert_eq!(
        me(&app, &mate_key).await["plan"]["name"],
        "free",
        "the others' plan"
    );
    // A heavier plan for the organisation is theirs too.
    let (status, _) = admin_json(
        &app,
        Method::PUT,
        &format!("/v1/admin/orgs/{org_id}/plan"),
        Some(json!({ "plan": "pro" })),
    )
    .await;
    assert_eq!(status, 200);
    let v = me(&app, &payer_key).await;
    assert_eq!(
        (&v["plan"]["name"], &v["plan"]["why"]),
        (&json!("pro"), &json!("organisation"))
    );

    // Every step is on the organisation's trail, by whoever took it.
    let trail = conveyor::users::audit::of(db, &format!("org:{org_id}"))
        .await
        .unwrap();
    let steps: Vec<(&str, &str)> = trail
        .iter()
        .map(|a| (a.action.as_str(), a.actor.as_str()))
        .collect();
    let by = |u: &conveyor::users::User| format!("user:{}", u.id);
    for step in [
        ("org.invite", by(&owner)),
        ("org.add_member", by(&mate)),
        ("org.invite_revoke", by(&owner)),
        ("org.invite_decline", by(&late)),
        ("org.add_member", by(&payer)),
    ] {
        assert!(
            steps.contains(&(step.0, step.1.as_str())),
            "{step:?} in {steps:?}"
        );
    }
    done(env, app).await;
}

/// `POST /v1/org/members` as `key`.
async fn invite(app: &TestApp, key: &str, user: &str) -> (u16, Value) {
    call(
        app,
        key,
        Method::POST,
        "/v1/org/members",
        Some(json!({ "user_id": user })),
    )
    .await
}

/// `POST /v1/me/invitations/{id}/{answer}` as `key`.
async fn answer_as(app: &TestApp, key: &str, id: &str, answer: &str) -> (u16, Value) {
    let path = format!("/v1/me/invitations/{id}/{answer}");
    call(app, key, Method::POST, &path, None).await
}

async fn revoke(app: &TestApp, key: &str, id: &str) -> (u16, Value) {
    let path = format!("/v1/org/invitations/{id}/revoke");
    call(app, key, Method::POST, &path, None).await
}

/// The ids of a list of invitations.
fn ids(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect()
}

/// A refusal: `status` with a JSON error of `code`.
#[track_caller]
fn assert_refused((status, body): (u16, Value), expected: u16, code: &str) {
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (expected, Some(code)),
        "{body}"
    );
    assert!(body["error"]["message"].is_string(), "{body}");
}
