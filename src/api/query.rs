//! `ApiQuery<T>`: axum's query-string extractor with rejections turned into JSON 400
//! errors (`invalid_query`, saying which parameter was wrong).

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

#[derive(Debug, Clone, Copy, Default)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(v)) => Ok(ApiQuery(v)),
            Err(e) => Err(ApiError::malformed("invalid_query", e.body_text())),
        }
    }
}

/// An optional RFC 3339 time from the query string (`since`, `from`, `to`), or a 400
/// naming `field`.
pub fn time_param(
    field: &str,
    value: Option<&str>,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, ApiError> {
    value
        .map(|s| {
            chrono::DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&chrono::Utc))
                .map_err(|_| {
                    ApiError::bad_request(field, "must be an RFC 3339 time (2026-12-01T00:00:00Z)")
                })
        })
        .transpose()
}

/// An optional identifier from the query string of at most `max` characters (the bound
/// the document states), or a 400 naming `field`.
pub fn id_param<'a>(
    field: &str,
    value: Option<&'a str>,
    max: usize,
) -> Result<Option<&'a str>, ApiError> {
    match value {
        Some(v) if v.chars().count() > max => Err(ApiError::bad_request(
            field,
            format!("is at most {max} characters"),
        )),
        v => Ok(v),
    }
}
