//! `Page<T>`: one page of a cursor-paginated list.

use serde::Serialize;
use utoipa::ToSchema;

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

impl<T: ToSchema> Page<T> {
    /// A full page (`limit` items) may have a successor, found after its last item.
    pub fn new(items: Vec<T>, limit: u64, cursor_of: impl Fn(&T) -> String) -> Self {
        let next_cursor = (items.len() as u64 == limit)
            .then(|| items.last().map(cursor_of))
            .flatten();
        Page { items, next_cursor }
    }
}
