//! `POST /v1/ws-tickets`: trade an API key for a short-lived, single-use ticket that a
//! browser puts in the WebSocket URL. Stored hashed; redeemed by a conditional UPDATE,
//! so a ticket works once, on any API instance.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::Utc;
use rand::RngCore as _;
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};

use crate::api::openapi::ErrorBody;
use crate::api::{AuthUser, CallerKey};
use crate::error::ApiError;
use crate::users::hash_key;

pub mod entity {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "ws_tickets")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub ticket_hash: String,
        pub user_id: String,
        pub expires_at: DateTimeUtc,
        pub used_at: Option<DateTimeUtc>,
        /// The API key it was issued with: revoking the key closes the socket.
        pub key_hash: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// A WebSocket ticket.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct TicketView {
    /// `wst_…`: pass as `GET /v1/ws?ticket=…`; single use.
    pub ticket: String,
    pub expires_in_secs: u64,
}

#[utoipa::path(post, path = "/v1/ws-tickets", tag = "live", security(("api_key" = [])), responses(
    (status = 201, description = "A single-use ticket for the WebSocket upgrade (browsers cannot send headers on one)", body = TicketView),
    crate::api::openapi::Unauthorized,
    (status = 429, description = "`rate_limited`: tickets per minute of this account (`Retry-After`)", body = ErrorBody)))]
pub async fn issue(
    State(live): State<super::Live>,
    AuthUser(user): AuthUser,
    CallerKey(key_hash): CallerKey,
) -> Result<(StatusCode, Json<TicketView>), ApiError> {
    let state = &live.core;
    state.limits.take(&super::TICKETS, &user.id).await?;
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    let ticket = format!("wst_{}", hex::encode(bytes));
    let ttl = live.settings.ticket_ttl_secs;
    entity::Entity::insert(entity::ActiveModel {
        ticket_hash: Set(hash_key(&ticket)),
        user_id: Set(user.id),
        expires_at: Set(Utc::now() + chrono::Duration::seconds(ttl as i64)),
        used_at: Set(None),
        key_hash: Set(Some(key_hash)),
    })
    .exec_without_returning(&state.db)
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(TicketView {
            ticket,
            expires_in_secs: ttl,
        }),
    ))
}

/// The ticket's (user, issuing key hash) if it is valid, unexpired and unused; it is
/// used up either way.
pub async fn redeem(
    db: &impl ConnectionTrait,
    ticket: &str,
) -> Result<Option<(String, Option<String>)>, DbErr> {
    let hash = hash_key(ticket);
    let now = Utc::now();
    let used = entity::Entity::update_many()
        .col_expr(entity::Column::UsedAt, Expr::value(now))
        .filter(entity::Column::TicketHash.eq(hash.as_str()))
        .filter(entity::Column::UsedAt.is_null())
        .filter(entity::Column::ExpiresAt.gt(now))
        .exec(db)
        .await?;
    if used.rows_affected != 1 {
        return Ok(None);
    }
    Ok(entity::Entity::find_by_id(hash)
        .one(db)
        .await?
        .map(|t| (t.user_id, t.key_hash)))
}

/// Tickets live a minute and work once: trimmed an hour after they expired.
pub const RETENTION: crate::housekeeping::Retention = crate::housekeeping::Retention {
    table: "ws_tickets",
    keep: std::time::Duration::from_secs(3600),
    trim: |db, cutoff| {
        Box::pin(async move {
            Ok(entity::Entity::delete_many()
                .filter(entity::Column::ExpiresAt.lt(cutoff))
                .exec(db)
                .await?
                .rows_affected)
        })
    },
};
