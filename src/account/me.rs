//! `GET /v1/me`: the caller, their credit balance and their membership.

use axum::Json;
use axum::extract::State;
use sea_orm::EntityTrait;
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::AuthUser;
use crate::api::Core;
use crate::api::openapi::ErrorBody;
use crate::error::ApiError;

/// The caller as `GET /v1/me` shows them.
#[derive(Debug, Serialize, ToSchema)]
pub struct MeView {
    pub id: String,
    pub name: String,
    pub credits: i64,
    pub is_admin: bool,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// `null` if the caller never had a membership.
    pub membership: Option<MembershipView>,
    /// Bytes of stored files (uploads and generated) against the quota.
    pub storage: StorageUse,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StorageUse {
    pub used_bytes: u64,
    pub quota_bytes: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MembershipView {
    /// A member until then (renewals stack).
    pub until: chrono::DateTime<chrono::Utc>,
    /// `until` is still ahead.
    pub active: bool,
}

#[utoipa::path(get, path = "/v1/me", tag = "account", security(("api_key" = [])), responses(
    (status = 200, description = "The caller, their current balance and membership", body = MeView),
    (status = 401, description = "Missing or invalid API key", body = ErrorBody)))]
pub async fn me(
    State(state): State<Core>,
    AuthUser(cached): AuthUser,
) -> Result<Json<MeView>, ApiError> {
    // Balance and membership move all the time: read them fresh, not from the identity
    // cache.
    let user = crate::users::entity::user::Entity::find_by_id(cached.id)
        .one(&state.db)
        .await?
        .ok_or(ApiError::Unauthorized)?;
    let now = chrono::Utc::now();
    let used_bytes = crate::storage::records::usage::used(&state.db, &user.id).await?;
    Ok(Json(MeView {
        id: user.id,
        name: user.name,
        credits: user.credits,
        is_admin: user.is_admin,
        created_at: user.created_at,
        membership: user.member_until.map(|until| MembershipView {
            until,
            active: until > now,
        }),
        storage: StorageUse {
            used_bytes,
            quota_bytes: state.storage.settings.quota_bytes,
        },
    }))
}
