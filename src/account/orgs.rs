//! Organisations over HTTP: admins create them, set their plan and add and remove
//! members directly (`/v1/admin/orgs…`); an organisation's owner removes members, and
//! invites rather than adds ([`super::invitations`]); every member sees theirs
//! (`GET /v1/org`). Each change is audited and announced, so the members' standing
//! (tenant, plan) changes on the next request on every instance.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::openapi::ErrorBody;
use crate::api::{Admin, ApiJson, AuthUser, Core};
use crate::error::ApiError;
use crate::users::orgs::{self, Org, OrgError};

impl From<OrgError> for ApiError {
    fn from(e: OrgError) -> Self {
        match e {
            OrgError::NoSuchOrg => ApiError::not_found("organisation"),
            OrgError::NoSuchUser => ApiError::not_found("user"),
            OrgError::InAnother => ApiError::refused("in_another_org", e.to_string()),
            OrgError::Owner => ApiError::refused("owner_cannot_leave", e.to_string()),
            OrgError::NotAMember => ApiError::not_found("member"),
            OrgError::BadName => ApiError::invalid("name", e.to_string()),
            OrgError::Db(e) => e.into(),
        }
    }
}

/// An organisation with its members and the plan they share.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrgView {
    pub id: String,
    pub name: String,
    pub owner_id: String,
    /// The plan an admin set on it (`null`: the owner's own plan applies).
    pub plan_set: Option<String>,
    /// The plan its members have now (a member whose own plan weighs more keeps theirs).
    pub plan: String,
    pub members: Vec<MemberView>,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MemberView {
    pub id: String,
    pub name: String,
    pub owner: bool,
}

async fn view(core: &Core, o: Org) -> Result<OrgView, ApiError> {
    let members = orgs::members(&core.db, &o.id).await?;
    // The organisation's own plan: a member whose own plan weighs more keeps theirs.
    let plan = crate::plans::standing::org_plan(&core.db, core.limits.plans(), &o, None).await?;
    Ok(OrgView {
        plan,
        members: members
            .into_iter()
            .map(|u| MemberView {
                owner: u.id == o.owner_id,
                id: u.id,
                name: u.name,
            })
            .collect(),
        id: o.id,
        name: o.name,
        owner_id: o.owner_id,
        plan_set: o.plan,
        created_at: o.created_at,
    })
}

/// The organisation as it is now (after a change), or 404.
pub(super) async fn fresh_view(core: &Core, id: &str) -> Result<Json<OrgView>, ApiError> {
    let o = orgs::get(&core.db, id)
        .await?
        .ok_or(ApiError::not_found("organisation"))?;
    Ok(Json(view(core, o).await?))
}

pub(super) async fn announce(core: &Core) {
    crate::plans::notices::announce(core.broker.as_ref()).await;
}

pub(super) fn actor(user: &crate::users::User) -> String {
    format!("user:{}", user.id)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewOrg {
    /// 1 to 128 characters, not blank.
    #[schema(min_length = 1, max_length = 128)]
    pub name: String,
    /// The user who owns it (joins it; may not belong to another).
    pub owner: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMember {
    /// The user to add (admins) or invite (an owner).
    pub user_id: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanChoice {
    /// A configured plan; `null` clears the choice (the plan follows memberships again).
    pub plan: Option<String>,
}

/// The plan named, if configured: else a 422 listing the plans.
pub(super) fn known_plan(core: &Core, plan: Option<&str>) -> Result<(), ApiError> {
    match core.limits.plans().unknown(plan) {
        Some(why) => Err(ApiError::invalid("plan", why)),
        None => Ok(()),
    }
}

#[utoipa::path(post, path = "/v1/admin/orgs", operation_id = "create_org", tag = "admin", security(("api_key" = [])),
    request_body = NewOrg,
    responses(
        (status = 201, description = "The organisation, its owner its first member", body = OrgView),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such user (the owner)", body = ErrorBody),
        (status = 409, description = "`in_another_org`: the owner belongs to another", body = ErrorBody),
        (status = 422, description = "A blank or too long name", body = ErrorBody)))]
pub async fn create(
    State(core): State<Core>,
    Admin(admin): Admin,
    ApiJson(req): ApiJson<NewOrg>,
) -> Result<(StatusCode, Json<OrgView>), ApiError> {
    let o = orgs::create(&core.db, &req.name, &req.owner, &actor(&admin)).await?;
    announce(&core).await;
    Ok((StatusCode::CREATED, Json(view(&core, o).await?)))
}

#[utoipa::path(get, path = "/v1/admin/orgs/{id}", tag = "admin", security(("api_key" = [])),
    params(("id" = String, Path, description = "Organisation id")),
    responses(
        (status = 200, description = "The organisation and its members", body = OrgView),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such organisation", body = ErrorBody)))]
pub async fn get(
    State(core): State<Core>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<OrgView>, ApiError> {
    fresh_view(&core, &id).await
}

#[utoipa::path(put, path = "/v1/admin/orgs/{id}/plan", tag = "admin", security(("api_key" = [])),
    params(("id" = String, Path, description = "Organisation id")),
    request_body = PlanChoice,
    responses(
        (status = 200, description = "The organisation with its plan now (audited as `plan.set`)", body = OrgView),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such organisation", body = ErrorBody),
        (status = 422, description = "An unknown plan", body = ErrorBody)))]
pub async fn set_plan(
    State(core): State<Core>,
    Admin(admin): Admin,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<PlanChoice>,
) -> Result<Json<OrgView>, ApiError> {
    known_plan(&core, req.plan.as_deref())?;
    orgs::set_plan(&core.db, &id, req.plan.as_deref(), &actor(&admin)).await?;
    announce(&core).await;
    fresh_view(&core, &id).await
}

#[utoipa::path(post, path = "/v1/admin/orgs/{id}/members", tag = "admin", security(("api_key" = [])),
    params(("id" = String, Path, description = "Organisation id")),
    request_body = NewMember,
    responses(
        (status = 200, description = "The organisation with the member added, at once: an operator's act, without an invitation (audited as `org.add_member`)", body = OrgView),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such organisation or user", body = ErrorBody),
        (status = 409, description = "`in_another_org`", body = ErrorBody)))]
pub async fn admin_add(
    State(core): State<Core>,
    Admin(admin): Admin,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<NewMember>,
) -> Result<Json<OrgView>, ApiError> {
    add_member(&core, &id, &req.user_id, &actor(&admin)).await
}

#[utoipa::path(delete, path = "/v1/admin/orgs/{id}/members/{user_id}", tag = "admin", security(("api_key" = [])),
    params(("id" = String, Path, description = "Organisation id"),
        ("user_id" = String, Path, description = "The member")),
    responses(
        (status = 200, description = "The organisation without the member", body = OrgView),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such organisation or member", body = ErrorBody),
        (status = 409, description = "`owner_cannot_leave`", body = ErrorBody)))]
pub async fn admin_remove(
    State(core): State<Core>,
    Admin(admin): Admin,
    Path((id, user_id)): Path<(String, String)>,
) -> Result<Json<OrgView>, ApiError> {
    remove_member(&core, &id, &user_id, &actor(&admin)).await
}

async fn add_member(
    core: &Core,
    org: &str,
    user: &str,
    actor: &str,
) -> Result<Json<OrgView>, ApiError> {
    orgs::add(&core.db, org, user, actor).await?;
    announce(core).await;
    fresh_view(core, org).await
}

async fn remove_member(
    core: &Core,
    org: &str,
    user: &str,
    actor: &str,
) -> Result<Json<OrgView>, ApiError> {
    orgs::remove(&core.db, org, user, actor).await?;
    announce(core).await;
    fresh_view(core, org).await
}

/// The caller's organisation (fresh: membership changes are read, not cached).
async fn own(core: &Core, user_id: &str) -> Result<Org, ApiError> {
    let me = crate::users::entity::user::Entity::find_by_id(user_id.to_owned())
        .one(&core.db)
        .await?
        .ok_or(ApiError::unauthorized())?;
    let Some(id) = me.org_id else {
        return Err(ApiError::not_found("organisation"));
    };
    orgs::get(&core.db, &id)
        .await?
        .ok_or(ApiError::not_found("organisation"))
}

use sea_orm::EntityTrait as _;

#[utoipa::path(get, path = "/v1/org", tag = "account", security(("api_key" = [])),
    responses(
        (status = 200, description = "The caller's organisation, its plan and members", body = OrgView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "The caller belongs to none", body = ErrorBody)))]
pub async fn mine(
    State(core): State<Core>,
    AuthUser(user): AuthUser,
) -> Result<Json<OrgView>, ApiError> {
    let o = own(&core, &user.id).await?;
    Ok(Json(view(&core, o).await?))
}

/// The caller's organisation, if they own it or are `member` themselves (a member may
/// leave): else 403.
async fn owned_or_self(core: &Core, user_id: &str, member: &str) -> Result<Org, ApiError> {
    let o = own(core, user_id).await?;
    if o.owner_id != user_id && member != user_id {
        return Err(ApiError::forbidden());
    }
    Ok(o)
}

/// The caller's organisation, if they own it: else 403.
pub(super) async fn owned(core: &Core, user_id: &str) -> Result<Org, ApiError> {
    let o = own(core, user_id).await?;
    if o.owner_id != user_id {
        return Err(ApiError::forbidden());
    }
    Ok(o)
}

#[utoipa::path(delete, path = "/v1/org/members/{user_id}", tag = "account", security(("api_key" = [])),
    params(("user_id" = String, Path, description = "The member")),
    responses(
        (status = 200, description = "The organisation without the member (audited); a member may remove themselves (leave)", body = OrgView),
        crate::api::openapi::Unauthorized,
        (status = 403, description = "The caller neither owns their organisation nor is the member", body = ErrorBody),
        (status = 404, description = "No such member", body = ErrorBody),
        (status = 409, description = "`owner_cannot_leave`", body = ErrorBody)))]
pub async fn owner_remove(
    State(core): State<Core>,
    AuthUser(user): AuthUser,
    Path(member): Path<String>,
) -> Result<Json<OrgView>, ApiError> {
    let o = owned_or_self(&core, &user.id, &member).await?;
    remove_member(&core, &o.id, &member, &actor(&user)).await
}

#[utoipa::path(put, path = "/v1/admin/users/{id}/plan", tag = "admin", security(("api_key" = [])),
    params(("id" = String, Path, description = "User id")),
    request_body = PlanChoice,
    responses(
        (status = 200, description = "The user's limits under the plan now (audited as `plan.set`)", body = crate::limits::UserLimits),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 422, description = "An unknown plan", body = ErrorBody)))]
pub async fn set_user_plan(
    State(core): State<Core>,
    Admin(admin): Admin,
    Path(user_id): Path<String>,
    ApiJson(req): ApiJson<PlanChoice>,
) -> Result<Json<crate::limits::UserLimits>, ApiError> {
    known_plan(&core, req.plan.as_deref())?;
    orgs::set_user_plan(&core.db, &user_id, req.plan.as_deref(), &actor(&admin)).await?;
    announce(&core).await;
    Ok(Json(core.limits.of(&user_id).await?))
}
