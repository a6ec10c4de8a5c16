//! The `Idempotency-Key` header: read and validated (1-128 visible ASCII characters),
//! as an extractor for the routes that take one.

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;

use crate::error::ApiError;

/// The request's `Idempotency-Key`, validated; `None` when absent. A malformed one is a
/// 400 naming the header.
#[derive(Debug, Clone)]
pub struct IdempotencyKey(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        key_from(&parts.headers).map(IdempotencyKey)
    }
}

pub const HEADER: &str = "idempotency-key";

/// The key from the headers, validated; `None` when absent.
pub fn key_from(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(v) = headers.get(HEADER) else {
        return Ok(None);
    };
    let key = v
        .to_str()
        .ok()
        .filter(|k| !k.is_empty() && k.len() <= 128 && k.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(|| {
            ApiError::bad_request(
                "Idempotency-Key",
                "must be 1 to 128 visible ASCII characters",
            )
        })?;
    Ok(Some(key.to_owned()))
}
