//! Admin routes over a tenant's keys and limits (`/v1/admin/users/{id}/…`), audited.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::keys::{self, AdminError};
use crate::api::openapi::ErrorBody;
use crate::api::{Admin, ApiJson, Core};
use crate::error::ApiError;
use crate::limits::{Overrides, UserLimits};
use crate::users::keys::KeyInfo;

impl From<AdminError> for ApiError {
    fn from(e: AdminError) -> Self {
        match e {
            AdminError::NoUser => ApiError::not_found("user"),
            AdminError::NoKey => ApiError::not_found("key"),
            AdminError::Db(e) => e.into(),
        }
    }
}

fn actor(admin: &crate::users::User) -> String {
    format!("user:{}", admin.id)
}

/// A key just made: the key itself appears here only.
#[derive(Debug, Serialize, ToSchema)]
pub struct NewKeyView {
    /// `cvk_…`: store it now, it is never shown again.
    pub key: String,
    #[serde(flatten)]
    pub info: KeyInfo,
}

/// A rotation: the new key, and the old one with the end of its overlap.
#[derive(Debug, Serialize, ToSchema)]
pub struct RotatedView {
    pub key: String,
    pub new: KeyInfo,
    pub old: KeyInfo,
}

#[utoipa::path(get, path = "/v1/admin/users/{id}/keys", tag = "admin", security(("api_key" = [])),
    params(("id" = String, Path, description = "User id")),
    responses(
        (status = 200, description = "The user's keys (never the keys themselves)", body = [KeyInfo]),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such user", body = ErrorBody)))]
pub async fn list_keys(
    State(core): State<Core>,
    _admin: Admin,
    Path(user_id): Path<String>,
) -> Result<Json<Vec<KeyInfo>>, ApiError> {
    Ok(Json(keys::list(&core.db, &user_id).await?))
}

#[utoipa::path(post, path = "/v1/admin/users/{id}/keys", tag = "admin", security(("api_key" = [])),
    params(("id" = String, Path, description = "User id")),
    responses(
        (status = 201, description = "A new key (shown once)", body = NewKeyView),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such user", body = ErrorBody)))]
pub async fn create_key(
    State(core): State<Core>,
    Admin(admin): Admin,
    Path(user_id): Path<String>,
) -> Result<(StatusCode, Json<NewKeyView>), ApiError> {
    let (info, key) = keys::create(&core.db, &actor(&admin), &user_id).await?;
    Ok((StatusCode::CREATED, Json(NewKeyView { key, info })))
}

#[utoipa::path(post, path = "/v1/admin/users/{id}/keys/{key_id}/revoke", tag = "admin", security(("api_key" = [])),
    params(("id" = String, Path, description = "User id"), ("key_id" = String, Path, description = "Key id")),
    responses(
        (status = 200, description = "Revoked, on every instance within a second; its WebSocket and SSE streams close", body = KeyInfo),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such key of this user", body = ErrorBody)))]
pub async fn revoke_key(
    State(core): State<Core>,
    Admin(admin): Admin,
    Path((user_id, key_id)): Path<(String, String)>,
) -> Result<Json<KeyInfo>, ApiError> {
    let info = keys::revoke(
        &core.db,
        Some(&core.broker),
        &actor(&admin),
        &user_id,
        &key_id,
    )
    .await?;
    Ok(Json(info))
}

#[utoipa::path(post, path = "/v1/admin/users/{id}/keys/{key_id}/rotate", tag = "admin", security(("api_key" = [])),
    params(("id" = String, Path, description = "User id"), ("key_id" = String, Path, description = "Key id")),
    responses(
        (status = 201, description = "A new key; the old one works for `auth.key_rotation_overlap_secs` more", body = RotatedView),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such live key of this user", body = ErrorBody)))]
pub async fn rotate_key(
    State(core): State<Core>,
    State(auth): State<std::sync::Arc<crate::api::settings::AuthSettings>>,
    Admin(admin): Admin,
    Path((user_id, key_id)): Path<(String, String)>,
) -> Result<(StatusCode, Json<RotatedView>), ApiError> {
    let overlap = std::time::Duration::from_secs(auth.key_rotation_overlap_secs);
    let (new, key, old) = keys::rotate(
        &core.db,
        Some(&core.broker),
        &actor(&admin),
        &user_id,
        &key_id,
        overlap,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(RotatedView { key, new, old })))
}

async fn limits_view(core: &Core, user_id: &str) -> Result<UserLimits, ApiError> {
    Ok(core.limits.of(user_id).await?)
}

#[utoipa::path(get, path = "/v1/admin/users/{id}/limits", tag = "admin", security(("api_key" = [])),
    params(("id" = String, Path, description = "User id")),
    responses(
        (status = 200, description = "The user's limits", body = UserLimits),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such user", body = ErrorBody)))]
pub async fn get_limits(
    State(core): State<Core>,
    _admin: Admin,
    Path(user_id): Path<String>,
) -> Result<Json<UserLimits>, ApiError> {
    keys::user_exists(&core.db, &user_id).await?;
    Ok(Json(limits_view(&core, &user_id).await?))
}

#[utoipa::path(put, path = "/v1/admin/users/{id}/limits", tag = "admin", security(("api_key" = [])),
    params(("id" = String, Path, description = "User id")),
    request_body(content = Overrides, description = "The overridden limits only (0 turns one off); absent ones follow the plan and `[limits]`. Replaces earlier overrides. A member of an organisation shares the organisation's: they are set for it."),
    responses(
        (status = 200, description = "The user's limits now (other instances apply them within 5 s)", body = UserLimits),
        (status = 400, description = "Not JSON", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 422, description = "An unknown limit or a value that is not a non-negative integer", body = ErrorBody)))]
pub async fn set_limits(
    State(core): State<Core>,
    Admin(admin): Admin,
    Path(user_id): Path<String>,
    ApiJson(overrides): ApiJson<Overrides>,
) -> Result<Json<UserLimits>, ApiError> {
    if let Some((key, problem)) = overrides.invalid(core.limits.declared()) {
        return Err(ApiError::invalid(key, problem));
    }
    let tenant = crate::plans::standing::resolve(&core.db, core.limits.plans(), &user_id).await?;
    keys::set_limits(&core.db, &actor(&admin), &user_id, &tenant, &overrides).await?;
    core.limits.forget(&tenant.tenant_id);
    Ok(Json(limits_view(&core, &user_id).await?))
}
