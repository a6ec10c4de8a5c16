//! `ApiError`: the one mapping from failures to HTTP answers. Every error is a JSON body
//! `{"error": {"code": "...", "message": "...", "field": "..."}}`; details of 5xx errors
//! go to the log, never to the client.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{message}")]
    BadRequest {
        code: &'static str,
        message: String,
        field: Option<String>,
    },
    #[error("{message}")]
    Unprocessable {
        code: &'static str,
        message: String,
        field: Option<String>,
    },
    #[error("missing or invalid API key")]
    Unauthorized,
    #[error("not allowed")]
    Forbidden,
    /// 403 `plan_required`: the caller's plan does not include this (`plan`: theirs;
    /// `plans`: the ones that do).
    #[error("{message}")]
    PlanRequired {
        message: String,
        plan: String,
        plans: Vec<String>,
    },
    #[error("insufficient credits: {needed} needed, balance {balance}")]
    PaymentRequired { needed: i64, balance: i64 },
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("{0}")]
    Conflict(String),
    /// 409 with a machine-readable reason (`sold_out`, `limit_reached`, …).
    #[error("{message}")]
    Refused { code: &'static str, message: String },
    #[error("request body is larger than the server accepts (server.body_limit_bytes)")]
    TooLarge,
    /// 413 with a reason (`file_too_large`, `storage_quota`, `field_too_large`): what was
    /// sent, or would be stored, is more than a limit allows; nothing was stored. `field`
    /// names the form field when one part was too large.
    #[error("{message}")]
    TooLargeFor {
        code: &'static str,
        message: String,
        field: Option<String>,
    },
    #[error("request took too long")]
    Timeout,
    /// 408 with a reason (`form_timeout`): part of the request did not arrive in time
    /// (`field` names it); nothing was done.
    #[error("{message}")]
    TooSlow {
        code: &'static str,
        message: String,
        field: Option<String>,
    },
    /// 429 with `Retry-After`; `code` names the limit (`rate_limited`,
    /// `too_many_tasks_in_flight`, `too_many_streams`).
    #[error("{message}")]
    TooManyRequests {
        code: &'static str,
        message: String,
        retry_after_secs: u64,
    },
    #[error("{0}")]
    Unavailable(String),
    /// 503 with `Retry-After` and a code: the platform sheds this work for now to keep
    /// its core path moving (`shedding_load`); nothing was done.
    #[error("{message}")]
    Overloaded {
        code: &'static str,
        message: String,
        retry_after_secs: u64,
    },
    /// 503 with `Retry-After`: a dependency is away for now; nothing was done.
    #[error("{message}; retry in {retry_after_secs} s")]
    RetryLater {
        message: String,
        retry_after_secs: u64,
    },
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    pub fn bad_request(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::BadRequest {
            code: "invalid_request",
            message: message.into(),
            field: Some(field.into()),
        }
    }

    /// 422 `invalid_field`: the request parsed, but `field` holds a value we cannot take.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::Unprocessable {
            code: "invalid_field",
            message: message.into(),
            field: Some(field.into()),
        }
    }

    fn parts(&self) -> (StatusCode, &'static str, Option<&str>) {
        match self {
            ApiError::BadRequest { code, field, .. } => {
                (StatusCode::BAD_REQUEST, code, field.as_deref())
            }
            ApiError::Unprocessable { code, field, .. } => {
                (StatusCode::UNPROCESSABLE_ENTITY, code, field.as_deref())
            }
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized", None),
            ApiError::Forbidden => (StatusCode::FORBIDDEN, "forbidden", None),
            ApiError::PlanRequired { .. } => (StatusCode::FORBIDDEN, "plan_required", None),
            ApiError::PaymentRequired { .. } => {
                (StatusCode::PAYMENT_REQUIRED, "insufficient_credits", None)
            }
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found", None),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "conflict", None),
            ApiError::Refused { code, .. } => (StatusCode::CONFLICT, code, None),
            ApiError::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", None),
            ApiError::TooLargeFor { code, field, .. } => {
                (StatusCode::PAYLOAD_TOO_LARGE, code, field.as_deref())
            }
            ApiError::Timeout => (StatusCode::REQUEST_TIMEOUT, "timeout", None),
            ApiError::TooSlow { code, field, .. } => {
                (StatusCode::REQUEST_TIMEOUT, code, field.as_deref())
            }
            ApiError::TooManyRequests { code, .. } => (StatusCode::TOO_MANY_REQUESTS, code, None),
            ApiError::Unavailable(_) | ApiError::RetryLater { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "unavailable", None)
            }
            ApiError::Overloaded { code, .. } => (StatusCode::SERVICE_UNAVAILABLE, code, None),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal", None),
        }
    }
}

impl From<sea_orm::DbErr> for ApiError {
    fn from(e: sea_orm::DbErr) -> Self {
        ApiError::Internal(anyhow::Error::new(e).context("database"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, field) = self.parts();
        let told = matches!(
            self,
            ApiError::Unavailable(_) | ApiError::RetryLater { .. } | ApiError::Overloaded { .. }
        );
        let message = if status.is_server_error() && !told {
            tracing::error!(error = ?self, "request failed");
            "internal error; see the server log".to_owned()
        } else {
            self.to_string()
        };
        let mut error = json!({ "code": code, "message": message });
        if let Some(f) = field {
            error["field"] = json!(f);
        }
        if let ApiError::PaymentRequired { needed, balance } = &self {
            error["needed"] = json!(needed);
            error["balance"] = json!(balance);
        }
        if let ApiError::PlanRequired { plan, plans, .. } = &self {
            error["plan"] = json!(plan);
            error["plans"] = json!(plans);
        }
        let mut resp = (status, Json(json!({ "error": error }))).into_response();
        if let ApiError::TooManyRequests {
            retry_after_secs, ..
        }
        | ApiError::RetryLater {
            retry_after_secs, ..
        }
        | ApiError::Overloaded {
            retry_after_secs, ..
        } = &self
        {
            resp.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(*retry_after_secs),
            );
        }
        if matches!(self, ApiError::Unauthorized) {
            resp.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        resp
    }
}
