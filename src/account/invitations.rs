//! Invitations over HTTP (issue 55): an organisation's owner invites a user
//! (`POST /v1/org/members`, 202), lists and revokes the open invitations
//! (`/v1/org/invitations…`); the invited user lists theirs and accepts or declines
//! (`/v1/me/invitations…`). Only an acceptance changes anyone's standing, so only it is
//! announced.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::orgs::{NewMember, OrgView, actor, announce, fresh_view, owned};
use crate::api::openapi::ErrorBody;
use crate::api::{ApiJson, AuthUser, Core};
use crate::error::ApiError;
use crate::users::entity::org;
use crate::users::invitations::{self, Invitation, InvitationError, State as InvitationStatus};

impl From<InvitationError> for ApiError {
    fn from(e: InvitationError) -> Self {
        let message = e.to_string();
        let refused = move |code| ApiError::refused(code, message);
        match e {
            InvitationError::NoSuchInvitation => ApiError::not_found("invitation"),
            InvitationError::Expired => refused("invitation_expired"),
            InvitationError::Revoked => refused("invitation_revoked"),
            InvitationError::Answered(_) => refused("invitation_answered"),
            InvitationError::AlreadyMember => refused("already_member"),
            InvitationError::TooMany => refused("too_many_invitations"),
            InvitationError::Org(e) => e.into(),
            InvitationError::Db(e) => e.into(),
        }
    }
}

/// An invitation to an organisation.
#[derive(Debug, Serialize, ToSchema)]
pub struct InvitationView {
    pub id: String,
    pub org_id: String,
    /// The organisation's name, for the invited user to know who asks.
    pub org_name: Option<String>,
    /// The invited user: the only one who may accept or decline it.
    pub user_id: String,
    /// The owner who invited.
    pub invited_by: String,
    pub status: InvitationStatus,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Not accepted by then, it expires (7 days after it was sent).
    pub expires_at: chrono::DateTime<chrono::Utc>,
    pub answered_at: Option<chrono::DateTime<chrono::Utc>>,
}

fn view(i: Invitation, o: Option<&org::Model>) -> InvitationView {
    InvitationView {
        status: InvitationStatus::of(&i, chrono::Utc::now()),
        org_name: o.map(|o| o.name.clone()),
        id: i.id,
        org_id: i.org_id,
        user_id: i.user_id,
        invited_by: i.invited_by,
        created_at: i.created_at,
        expires_at: i.expires_at,
        answered_at: i.answered_at,
    }
}

#[utoipa::path(post, path = "/v1/org/members", operation_id = "invite_member", tag = "account", security(("api_key" = [])),
    request_body = NewMember,
    responses(
        (status = 202, description = "An invitation, pending until the user accepts it (`POST /v1/me/invitations/{id}/accept`); the user is not a member before. An open invitation of the same user is answered again (audited as `org.invite`)", body = InvitationView),
        crate::api::openapi::Unauthorized,
        (status = 403, description = "The caller does not own their organisation", body = ErrorBody),
        (status = 404, description = "The caller belongs to none, or no such user", body = ErrorBody),
        (status = 409, description = "`already_member`; `too_many_invitations` (100 open at once)", body = ErrorBody)))]
pub async fn invite(
    State(core): State<Core>,
    AuthUser(user): AuthUser,
    ApiJson(req): ApiJson<NewMember>,
) -> Result<(StatusCode, Json<InvitationView>), ApiError> {
    let o = owned(&core, &user.id).await?;
    let (i, _) = invitations::invite(&core.db, &o.id, &req.user_id, &user.id).await?;
    Ok((StatusCode::ACCEPTED, Json(view(i, Some(&o)))))
}

#[utoipa::path(get, path = "/v1/org/invitations", operation_id = "org_invitations", tag = "account", security(("api_key" = [])),
    responses(
        (status = 200, description = "The organisation's open invitations, newest first", body = [InvitationView]),
        crate::api::openapi::Unauthorized,
        (status = 403, description = "The caller does not own their organisation", body = ErrorBody),
        (status = 404, description = "The caller belongs to none", body = ErrorBody)))]
pub async fn of_org(
    State(core): State<Core>,
    AuthUser(user): AuthUser,
) -> Result<Json<Vec<InvitationView>>, ApiError> {
    let o = owned(&core, &user.id).await?;
    let list = invitations::of_org(&core.db, &o.id).await?;
    Ok(Json(list.into_iter().map(|i| view(i, Some(&o))).collect()))
}

#[utoipa::path(post, path = "/v1/org/invitations/{id}/revoke", operation_id = "revoke_invitation", tag = "account", security(("api_key" = [])),
    params(("id" = String, Path, description = "Invitation id")),
    responses(
        (status = 200, description = "The invitation, revoked: it can no longer be accepted (audited as `org.invite_revoke`)", body = InvitationView),
        crate::api::openapi::Unauthorized,
        (status = 403, description = "The caller does not own their organisation", body = ErrorBody),
        (status = 404, description = "The caller belongs to none, or no such invitation of their organisation", body = ErrorBody),
        (status = 409, description = "`invitation_expired`, `invitation_revoked`, `invitation_answered`: it is no longer open", body = ErrorBody)))]
pub async fn revoke(
    State(core): State<Core>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<InvitationView>, ApiError> {
    let o = owned(&core, &user.id).await?;
    let i = invitations::revoke(&core.db, &o.id, &id, &actor(&user)).await?;
    Ok(Json(view(i, Some(&o))))
}

#[utoipa::path(get, path = "/v1/me/invitations", operation_id = "my_invitations", tag = "account", security(("api_key" = [])),
    responses(
        (status = 200, description = "The caller's open invitations, newest first (at most 100)", body = [InvitationView]),
        crate::api::openapi::Unauthorized))]
pub async fn mine(
    State(core): State<Core>,
    AuthUser(user): AuthUser,
) -> Result<Json<Vec<InvitationView>>, ApiError> {
    let list = invitations::of_user(&core.db, &user.id).await?;
    Ok(Json(
        list.into_iter().map(|(i, o)| view(i, o.as_ref())).collect(),
    ))
}

#[utoipa::path(post, path = "/v1/me/invitations/{id}/accept", operation_id = "accept_invitation", tag = "account", security(("api_key" = [])),
    params(("id" = String, Path, description = "Invitation id")),
    responses(
        (status = 200, description = "The organisation joined (audited as `org.add_member`). Its plan applies unless the caller's own weighs more: a bought membership or an admin's choice of a heavier plan stays theirs", body = OrgView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such invitation of the caller's", body = ErrorBody),
        (status = 409, description = "`invitation_expired`, `invitation_revoked`, `invitation_answered`; `in_another_org` (leave it first)", body = ErrorBody)))]
pub async fn accept(
    State(core): State<Core>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<OrgView>, ApiError> {
    let org_id = invitations::accept(&core.db, &id, &user.id).await?;
    announce(&core).await;
    fresh_view(&core, &org_id).await
}

#[utoipa::path(post, path = "/v1/me/invitations/{id}/decline", operation_id = "decline_invitation", tag = "account", security(("api_key" = [])),
    params(("id" = String, Path, description = "Invitation id")),
    responses(
        (status = 200, description = "The invitation, declined (audited as `org.invite_decline`)", body = InvitationView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such invitation of the caller's", body = ErrorBody),
        (status = 409, description = "`invitation_expired`, `invitation_revoked`, `invitation_answered`", body = ErrorBody)))]
pub async fn decline(
    State(core): State<Core>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<InvitationView>, ApiError> {
    let i = invitations::decline(&core.db, &id, &user.id).await?;
    let o = crate::users::orgs::get(&core.db, &i.org_id).await?;
    Ok(Json(view(i, o.as_ref())))
}
