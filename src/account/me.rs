//! `GET /v1/me`: the caller, their credit balance, their membership, their plan with its
//! limits and what they use of each.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use sea_orm::EntityTrait;
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::AuthUser;
use crate::api::Core;
use crate::error::ApiError;
use crate::plans::Why;

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
    /// The plan that applies, and whose it is.
    pub plan: PlanView,
    /// Every limit in effect for the caller's tenant, by key, with what it holds of the
    /// caps that can say (`used`).
    pub limits: BTreeMap<String, LimitUse>,
    /// Bytes of stored files (uploads and generated) against the quota.
    pub storage: StorageUse,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlanView {
    pub name: String,
    /// `default` (free), `membership`, `admin` (set on the user) or `organisation`.
    pub why: Why,
    /// Whose limits and share the caller's work counts against: the organisation, else
    /// the caller.
    pub tenant_id: String,
    pub org_id: Option<String>,
    /// Its share of a contended lane against other plans'.
    pub weight: u32,
    /// The task kinds it may submit; empty: every kind.
    pub kinds: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LimitUse {
    /// In effect (0: off).
    pub limit: u32,
    /// Held now (caps on things held only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used: Option<u64>,
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
    (status = 200, description = "The caller: balance, membership, plan, limits and usage", body = MeView),
    crate::api::openapi::Unauthorized))]
pub async fn me(
    State(state): State<Core>,
    AuthUser(cached): AuthUser,
) -> Result<Json<MeView>, ApiError> {
    // Balance, membership and plan move all the time: read them fresh, not from the
    // identity or standing caches.
    let user = crate::users::entity::user::Entity::find_by_id(cached.id)
        .one(&state.db)
        .await?
        .ok_or(ApiError::unauthorized())?;
    let plans = state.limits.plans();
    let standing = crate::plans::standing::resolve(&state.db, plans, &user.id).await?;
    let plan = plans.get(&standing.plan);
    let limits = state
        .limits
        .of_tenant(&standing.tenant_id, &standing.plan)
        .await?;
    let mut used = state.limits.used(&standing.tenant_id).await?;
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
        limits: limits
            .effective
            .into_iter()
            .map(|(k, limit)| {
                let used = used.remove(&k);
                (k, LimitUse { limit, used })
            })
            .collect(),
        storage: StorageUse {
            used_bytes,
            quota_bytes: plan.storage_quota(state.storage.settings.quota_bytes),
        },
        plan: PlanView {
            name: standing.plan.clone(),
            why: standing.why,
            tenant_id: standing.tenant_id,
            org_id: standing.org_id,
            weight: plan.weight,
            kinds: plan.kinds.clone(),
        },
    }))
}
