//! Reading dead letters: the filtered list and one letter in full.

use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::Value;
use utoipa::IntoParams;

use super::view::ActionView;
use super::view::DeadLetterView;
use super::view::parse_id;
use crate::api::openapi::ErrorBody;
use crate::api::{Admin, ApiQuery, Core};
use crate::dead_letters::{Filter, Status};
use crate::error::ApiError;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// A queue key (`ai.short`, …).
    queue: Option<String>,
    #[param(value_type = Option<Status>)]
    status: Option<String>,
    /// malformed, permanent, exhausted or crash_loop.
    reason: Option<String>,
    /// The message kind (`ai.task.run`, …).
    kind: Option<String>,
    /// What the message was about: a task, order, payment, material or webhook delivery
    /// id (indexed).
    #[param(max_length = 64)]
    business_id: Option<String>,
    /// Only letters that died (last) at or after this time (RFC 3339).
    #[param(value_type = Option<String>, format = DateTime)]
    since: Option<String>,
    /// `next_cursor` of the previous page.
    #[param(pattern = "^[0-9]{1,18}$")]
    cursor: Option<String>,
    /// Page size, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u64>,
}

#[utoipa::path(get, path = "/v1/admin/dead-letters", tag = "admin", operation_id = "list_dead_letters",
    security(("api_key" = [])), params(ListQuery),
    responses(
        (status = 200, description = "Dead letters, newest first", body = crate::api::Page<DeadLetterView>),
        crate::api::openapi::Unauthorized,
        (status = 400, description = "Bad filter, limit or cursor (named in `field`)", body = ErrorBody),
        crate::api::openapi::NotAdmin))]
pub(crate) async fn list(
    State(state): State<Core>,
    _: Admin,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<axum::Json<crate::api::Page<DeadLetterView>>, ApiError> {
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(Status::parse(s).ok_or_else(|| {
            ApiError::bad_request(
                "status",
                format!("unknown status `{s}`; expected {}", Status::names()),
            )
        })?),
    };
    let limit = crate::api::page::limit(q.limit)?;
    let before = match q.cursor.as_deref() {
        None => None,
        Some(c) => Some(
            c.parse::<i64>()
                .map_err(|_| ApiError::bad_request("cursor", "is not a cursor this API issued"))?,
        ),
    };
    let since = crate::api::query::time_param("since", q.since.as_deref())?;
    crate::api::query::id_param("business_id", q.business_id.as_deref(), 64)?;
    let filter = Filter {
        queue: q.queue.as_deref(),
        status,
        reason: q.reason.as_deref(),
        kind: q.kind.as_deref(),
        since,
        business_id: q.business_id.as_deref(),
    };
    let rows = crate::dead_letters::search(&state.db, &filter, before, limit).await?;
    let items: Vec<DeadLetterView> = rows.into_iter().map(DeadLetterView::from).collect();
    Ok(axum::Json(crate::api::Page::new(items, limit, |d| {
        d.id.to_string()
    })))
}

#[utoipa::path(get, path = "/v1/admin/dead-letters/{id}", tag = "admin", operation_id = "show_dead_letter",
    security(("api_key" = [])), params(("id" = i64, Path, description = "Dead letter id")),
    responses(
        (status = 200, description = "The dead letter with its body (the envelope as it died) and audit trail", body = DeadLetterView),
        crate::api::openapi::Unauthorized,
        crate::api::openapi::NotAdmin,
        (status = 404, description = "No such dead letter", body = ErrorBody)))]
pub(crate) async fn show(
    State(state): State<Core>,
    _: Admin,
    Path(id): Path<String>,
) -> Result<axum::Json<DeadLetterView>, ApiError> {
    let id = parse_id(&id)?;
    let row = crate::dead_letters::get(&state.db, id)
        .await?
        .ok_or(ApiError::not_found("dead letter"))?;
    let body = serde_json::from_str(&row.body).unwrap_or_else(|_| Value::String(row.body.clone()));
    let actions = crate::dead_letters::actions(&state.db, id).await?;
    let mut view = DeadLetterView::from(row);
    view.body = Some(body);
    view.actions = Some(actions.into_iter().map(ActionView::from).collect());
    Ok(axum::Json(view))
}
