//! `Page<T>`: one page of a cursor-paginated list, and [`IdPage`]: the `cursor` and
//! `limit` a list keyed by id is asked for with.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::ApiQuery;

/// Newest first; pass `next_cursor` as `cursor` for the next page (null: no more).
#[derive(Debug, Serialize, ToSchema)]
pub struct Page<T: ToSchema> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// The `limit` query parameter: 1 to 100, 20 when absent.
pub fn limit(requested: Option<u64>) -> Result<u64, crate::error::ApiError> {
    let limit = requested.unwrap_or(20);
    if (1..=100).contains(&limit) {
        Ok(limit)
    } else {
        Err(crate::error::ApiError::bad_request(
            "limit",
            "must be 1 to 100",
        ))
    }
}

/// The `cursor` query parameter of a list keyed by id (UUIDs: the last id of the previous
/// page): `None`, or one that could be an id this API issued; anything else is a 400.
pub fn id_cursor(cursor: Option<&str>) -> Result<Option<&str>, crate::error::ApiError> {
    match cursor {
        Some(c)
            if c.is_empty()
                || c.len() > 64
                || !c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') =>
        {
            Err(crate::error::ApiError::bad_request(
                "cursor",
                "is not a cursor this API issued",
            ))
        }
        c => Ok(c),
    }
}

impl<T: ToSchema> Page<T> {
    /// A full page (`limit` items) may have a successor, found after its last item.
    pub fn new(items: Vec<T>, limit: u64, cursor_of: impl Fn(&T) -> String) -> Self {
        let next_cursor = (items.len() as u64 == limit)
            .then(|| items.last().map(cursor_of))
            .flatten();
        Page { items, next_cursor }
    }
}

/// The query string of a list keyed by id and nothing else (`params(PageQuery)` in its
/// `#[utoipa::path]`); read through [`IdPage`].
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// `next_cursor` of the previous page.
    #[param(pattern = "^[0-9A-Za-z-]{1,64}$")]
    cursor: Option<String>,
    /// Page size, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u64>,
}

/// The page a list keyed by id was asked for, checked: `limit` 1 to 100 (20 when absent),
/// `cursor` one that could be an id this API issued. Extracted from a [`PageQuery`]
/// string (the same 400s as [`ApiQuery`], [`limit`] and [`id_cursor`]); a list with
/// filters of its own declares `cursor` and `limit` beside them and calls [`IdPage::new`].
#[derive(Debug, Clone)]
pub struct IdPage {
    pub limit: u64,
    pub cursor: Option<String>,
}

impl IdPage {
    /// Checks `limit` first, then `cursor`.
    pub fn new(limit: Option<u64>, cursor: Option<String>) -> Result<Self, crate::error::ApiError> {
        let limit = self::limit(limit)?;
        id_cursor(cursor.as_deref())?;
        Ok(IdPage { limit, cursor })
    }

    pub fn cursor(&self) -> Option<&str> {
        self.cursor.as_deref()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IdPage {
    type Rejection = crate::error::ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let ApiQuery(q) = ApiQuery::<PageQuery>::from_request_parts(parts, state).await?;
        IdPage::new(q.limit, q.cursor)
    }
}
