//! `GET /v1/me`: the caller and their credit balance.

use axum::Json;
use axum::extract::State;
use sea_orm::EntityTrait;
use serde_json::{Value, json};

use crate::api::AuthUser;
use crate::app::AppState;
use crate::error::ApiError;

pub async fn me(
    State(state): State<AppState>,
    AuthUser(cached): AuthUser,
) -> Result<Json<Value>, ApiError> {
    // The balance moves all the time: read it fresh, not from the identity cache.
    let user = super::entity::user::Entity::find_by_id(cached.id)
        .one(&state.db)
        .await?
        .ok_or(ApiError::Unauthorized)?;
    Ok(Json(json!({
        "id": user.id,
        "name": user.name,
        "credits": user.credits,
        "is_admin": user.is_admin,
        "created_at": user.created_at,
    })))
}
