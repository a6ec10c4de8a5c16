//! `GET /v1/me/ledger`: the caller's credit ledger, newest first, a page at a time.

use axum::Json;
use axum::extract::State;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::openapi::ErrorBody;
use crate::api::{ApiQuery, AuthUser, Core, Page};
use crate::error::ApiError;
use crate::users::entity::ledger;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LedgerParams {
    /// `next_cursor` of the previous page.
    #[param(pattern = "^[0-9]{1,18}$")]
    pub cursor: Option<String>,
    /// 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u64>,
}

/// One movement of the balance (or of the membership, with `delta` 0).
#[derive(Debug, Serialize, ToSchema)]
pub struct LedgerEntry {
    pub id: i64,
    pub delta: i64,
    /// `grant`, `reserve`, `consume`, `refund`, `take_back`, `membership`, …
    pub reason: String,
    /// What caused it (`payment:<id>`, `reserve:<task>`, …); unique: an effect is booked
    /// once.
    pub effect: String,
    pub at: chrono::DateTime<chrono::Utc>,
}

#[utoipa::path(get, path = "/v1/me/ledger", tag = "account", security(("api_key" = [])),
    params(LedgerParams),
    responses(
        (status = 200, description = "The caller's ledger, newest first", body = Page<LedgerEntry>),
        (status = 400, description = "Bad cursor or limit", body = ErrorBody),
        crate::api::openapi::Unauthorized))]
pub async fn ledger(
    State(state): State<Core>,
    AuthUser(user): AuthUser,
    ApiQuery(p): ApiQuery<LedgerParams>,
) -> Result<Json<Page<LedgerEntry>>, ApiError> {
    let limit = crate::api::page::limit(p.limit)?;
    let mut q = ledger::Entity::find()
        .filter(ledger::Column::UserId.eq(user.id.as_str()))
        .order_by_desc(ledger::Column::Id);
    if let Some(c) = p.cursor.as_deref() {
        let before: i64 = c
            .parse()
            .map_err(|_| ApiError::bad_request("cursor", "not a cursor this API gave"))?;
        q = q.filter(ledger::Column::Id.lt(before));
    }
    let items = q
        .limit(limit)
        .all(&state.db)
        .await?
        .into_iter()
        .map(|e| LedgerEntry {
            id: e.id,
            delta: e.delta,
            reason: e.reason,
            effect: e.effect_key,
            at: e.created_at,
        })
        .collect();
    Ok(Json(Page::new(items, limit, |e: &LedgerEntry| {
        e.id.to_string()
    })))
}
