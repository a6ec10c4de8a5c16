//! `ApiError`: the one mapping from failures to HTTP answers. Every error is a JSON body
//! `{"error": {"code": "...", "message": "...", "field": "..."}}`; details of 5xx errors
//! go to the log, never to the client.
//!
//! A refusal is data (a status, a code, a message, optionally the field at fault, the
//! object's other fields and a `Retry-After`), made by the constructor of its kind
//! ([`ApiError::not_found`], [`ApiError::refused`], [`ApiError::too_many`], …): a new
//! kind of refusal is a constructor here, not a variant every `match` must learn.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// A failure answered as JSON.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    /// Machine-readable (`not_found`, `too_many_streams`, …).
    code: &'static str,
    /// What the client reads (a 5xx's own message only when it is `told`).
    message: String,
    /// The request field at fault.
    field: Option<String>,
    /// More fields of the error object (`needed` and `balance`, `plan` and `plans`).
    extra: Map<String, Value>,
    /// Sent as `Retry-After`.
    retry_after_secs: Option<u64>,
    /// A 5xx whose message is for the client (the platform is away or shedding work),
    /// not a failure hidden behind "see the server log".
    told: bool,
    /// What failed, for the log (500s).
    source: Option<anyhow::Error>,
}

impl ApiError {
    /// A refusal with `status`, `code` and `message`.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
            extra: Map::new(),
            retry_after_secs: None,
            told: false,
            source: None,
        }
    }

    /// Names the request field at fault (none: unchanged).
    pub fn with_field(mut self, field: Option<String>) -> Self {
        if field.is_some() {
            self.field = field;
        }
        self
    }

    /// Adds `key` to the error object.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// Sends `Retry-After: secs`.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs);
        self
    }

    /// 400 `invalid_request` about `field`.
    pub fn bad_request(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::malformed("invalid_request", message.into()).with_field(Some(field.into()))
    }

    /// 400 with `code`: the request could not be read as this operation takes it
    /// (`malformed_json`, `invalid_query`, `invalid_multipart`, …).
    pub fn malformed(code: &'static str, message: String) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 422 `invalid_field`: the request parsed, but `field` holds a value we cannot take.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::unprocessable("invalid_field", message.into()).with_field(Some(field.into()))
    }

    /// 422 with `code`: the request parsed, but what it asks cannot be done as it is.
    pub fn unprocessable(code: &'static str, message: String) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }

    /// 401 `unauthorized` (with `WWW-Authenticate: Bearer`).
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or invalid API key",
        )
    }

    /// 403 `forbidden`.
    pub fn forbidden() -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", "not allowed")
    }

    /// 403 `plan_required`: the caller's plan (`plan`) does not include this; `plans` do.
    pub fn plan_required(message: String, plan: String, plans: Vec<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "plan_required", message)
            .with("plan", plan)
            .with("plans", plans)
    }

    /// 402 `insufficient_credits`, with the cost and the balance.
    pub fn payment_required(needed: i64, balance: i64) -> Self {
        let message = format!("insufficient credits: {needed} needed, balance {balance}");
        Self::new(
            StatusCode::PAYMENT_REQUIRED,
            "insufficient_credits",
            message,
        )
        .with("needed", needed)
        .with("balance", balance)
    }

    /// 404 `not_found`: no `what` here (or none the caller may see).
    pub fn not_found(what: &'static str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} not found"),
        )
    }

    /// 409 `conflict`.
    pub fn conflict(message: String) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 409 with a machine-readable reason (`sold_out`, `limit_reached`, …).
    pub fn refused(code: &'static str, message: String) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    /// 413 `payload_too_large`: the body is over `server.body_limit_bytes`.
    pub fn too_large() -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "request body is larger than the server accepts (server.body_limit_bytes)",
        )
    }

    /// 413 with a reason (`file_too_large`, `storage_quota`, `field_too_large`): what was
    /// sent, or would be stored, is more than a limit allows; nothing was stored.
    pub fn too_large_for(code: &'static str, message: String) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, code, message)
    }

    /// 408 `timeout`: the request took longer than `server.request_timeout_ms`.
    pub fn timeout() -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            "request took too long",
        )
    }

    /// 408 with a reason (`form_timeout`): part of the request did not arrive in time;
    /// nothing was done.
    pub fn too_slow(code: &'static str, message: String) -> Self {
        Self::new(StatusCode::REQUEST_TIMEOUT, code, message)
    }

    /// 429 with `Retry-After`; `code` names the limit (`rate_limited`,
    /// `too_many_tasks_in_flight`, `too_many_streams`).
    pub fn too_many(code: &'static str, message: String, retry_after_secs: u64) -> Self {
        Self::new(StatusCode::TOO_MANY_REQUESTS, code, message).retry_after(retry_after_secs)
    }

    /// 503 `unavailable`: a dependency is away; the message says which.
    pub fn unavailable(message: String) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message).for_the_client()
    }

    /// 503 `unavailable` with `Retry-After`: a dependency is away for now; nothing was
    /// done.
    pub fn retry_later(message: String, retry_after_secs: u64) -> Self {
        let message = format!("{message}; retry in {retry_after_secs} s");
        Self::unavailable(message).retry_after(retry_after_secs)
    }

    /// 503 with `Retry-After` and a code: the platform sheds this work for now to keep
    /// its core path moving (`shedding_load`); nothing was done.
    pub fn overloaded(code: &'static str, message: String, retry_after_secs: u64) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
            .for_the_client()
            .retry_after(retry_after_secs)
    }

    /// 500 `internal`: `source` goes to the log, the client reads that it happened.
    pub fn internal(source: anyhow::Error) -> Self {
        let mut e = Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            source.to_string(),
        );
        e.source = Some(source);
        e
    }

    /// A 5xx whose message the client reads.
    fn for_the_client(mut self) -> Self {
        self.told = true;
        self
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    pub fn code(&self) -> &'static str {
        self.code
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.source {
            Some(source) => std::fmt::Display::fmt(source, f),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ApiError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().and_then(|e| e.source())
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        ApiError::internal(e)
    }
}

impl From<sea_orm::DbErr> for ApiError {
    fn from(e: sea_orm::DbErr) -> Self {
        ApiError::internal(anyhow::Error::new(e).context("database"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let message = if self.status.is_server_error() && !self.told {
            tracing::error!(error = ?self, "request failed");
            "internal error; see the server log".to_owned()
        } else {
            self.message
        };
        let mut error = json!({ "code": self.code, "message": message });
        if let Some(f) = self.field {
            error["field"] = json!(f);
        }
        if let Value::Object(fields) = &mut error {
            fields.extend(self.extra);
        }
        let mut resp = (self.status, Json(json!({ "error": error }))).into_response();
        if let Some(secs) = self.retry_after_secs {
            resp.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(secs),
            );
        }
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        resp
    }
}
