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
