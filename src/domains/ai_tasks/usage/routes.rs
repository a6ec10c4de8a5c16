//! `GET /v1/me/usage?from=&to=`: what the caller's tasks consumed and were charged in a
//! time range, summed by kind and provider.

use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Duration, Utc};
use sea_orm::sea_query::{Expr, ExprTrait as _};
use sea_orm::{ColumnTrait as _, EntityTrait as _, QueryFilter as _, QueryOrder, QuerySelect as _};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::entity::{self, Column};
use crate::api::openapi::ErrorBody;
use crate::api::query::time_param;
use crate::api::{ApiQuery, AuthUser, Core};
use crate::error::ApiError;

/// kind, provider, tasks, input, output, total tokens, images, media ms, credits.
type Sums = (String, String, i64, i64, i64, i64, i64, i64, i64);

/// The longest range one request sums.
const MAX_RANGE_DAYS: i64 = 400;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UsageParams {
    /// Start (RFC 3339, inclusive); default 30 days before `to`.
    #[param(value_type = Option<String>, format = DateTime)]
    pub from: Option<String>,
    /// End (RFC 3339, exclusive); default now.
    #[param(value_type = Option<String>, format = DateTime)]
    pub to: Option<String>,
}

/// One kind served by one provider in the range.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageLine {
    pub kind: String,
    /// The `[ai.providers]` name that served it.
    pub provider: String,
    /// Tasks with a step in the range.
    pub tasks: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub total_tokens: i64,
    pub images: i64,
    pub media_seconds: f64,
    /// Credits charged (on each task's last step).
    pub credits: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UsageReport {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub items: Vec<UsageLine>,
    /// The credits of every line.
    pub credits: i64,
}

#[utoipa::path(get, path = "/v1/me/usage", tag = "account", security(("api_key" = [])),
    params(UsageParams),
    responses(
        (status = 200, description = "The caller's provider usage and credits, by kind and provider", body = UsageReport),
        (status = 400, description = "A bad time, `from` not before `to`, or a range over 400 days", body = ErrorBody),
        crate::api::openapi::Unauthorized))]
pub async fn usage(
    State(core): State<Core>,
    AuthUser(user): AuthUser,
    ApiQuery(p): ApiQuery<UsageParams>,
) -> Result<Json<UsageReport>, ApiError> {
    let to = time_param("to", p.to.as_deref())?.unwrap_or_else(Utc::now);
    let from = time_param("from", p.from.as_deref())?.unwrap_or(to - Duration::days(30));
    if from >= to {
        return Err(ApiError::bad_request("from", "must be before `to`"));
    }
    if to - from > Duration::days(MAX_RANGE_DAYS) {
        return Err(ApiError::bad_request(
            "from",
            format!("the range is at most {MAX_RANGE_DAYS} days"),
        ));
    }
    let db = &core.db;
    let sum = |c: Column| crate::db::integer_sum(db, c);
    let rows: Vec<Sums> = entity::Entity::find()
        .select_only()
        .column(Column::Kind)
        .column(Column::Provider)
        .expr(Expr::col(Column::TaskId).count_distinct())
        .expr(sum(Column::InputTokens))
        .expr(sum(Column::OutputTokens))
        .expr(sum(Column::TotalTokens))
        .expr(sum(Column::Images))
        .expr(sum(Column::MediaMs))
        .expr(sum(Column::Credits))
        .filter(Column::UserId.eq(user.id.as_str()))
        .filter(Column::CreatedAt.gte(from))
        .filter(Column::CreatedAt.lt(to))
        .group_by(Column::Kind)
        .group_by(Column::Provider)
        .order_by_asc(Column::Kind)
        .order_by_asc(Column::Provider)
        .into_tuple()
        .all(db)
        .await?;
    let items: Vec<UsageLine> = rows
        .into_iter()
        .map(
            |(kind, provider, tasks, input, output, total, images, media_ms, credits)| UsageLine {
                kind,
                provider,
                tasks,
                input_tokens: input,
                output_tokens: output,
                total_tokens: total,
                images,
                media_seconds: media_ms as f64 / 1000.0,
                credits,
            },
        )
        .collect();
    let credits = items.iter().map(|l| l.credits).sum();
    Ok(Json(UsageReport {
        from,
        to,
        items,
        credits,
    }))
}
