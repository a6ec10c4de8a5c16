//! How the task routes answer: a task as JSON, a store refusal as an HTTP error, a
//! created or accepted task with its `Location`. Shared by the routes of submission,
//! retry and the operators' bulk actions.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::store::{StoreError, Task};
use super::view::TaskView;
use crate::error::ApiError;

pub fn view_json(t: Task) -> Result<Value, ApiError> {
    serde_json::to_value(TaskView::from(t)).map_err(|e| ApiError::internal(e.into()))
}

pub fn submit_error(e: StoreError) -> ApiError {
    match e {
        StoreError::InsufficientCredits { needed, balance } => {
            ApiError::payment_required(needed, balance)
        }
        StoreError::TooManyInFlight { limit } => super::limits::in_flight_refusal(limit),
        StoreError::Outbox(e) => ApiError::internal(e.into()),
        StoreError::Db(e) => e.into(),
    }
}

pub fn with_location(status: u16, body: Value) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::ACCEPTED);
    let location = body["id"]
        .as_str()
        .and_then(|id| HeaderValue::from_str(&format!("/v1/tasks/{id}")).ok());
    let mut resp = (code, axum::Json(body)).into_response();
    if let Some(loc) = location {
        resp.headers_mut().insert(header::LOCATION, loc);
    }
    resp
}
