//! `GET /v1/me`: the caller and their credit balance.

use axum::Json;
use serde_json::{Value, json};

use crate::api::AuthUser;

pub async fn me(AuthUser(user): AuthUser) -> Json<Value> {
    Json(json!({
        "id": user.id,
        "name": user.name,
        "credits": user.credits,
        "is_admin": user.is_admin,
        "created_at": user.created_at,
    }))
}
