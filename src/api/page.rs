//! `Page<T>`: one page of a cursor-paginated list.

use serde::Serialize;
use utoipa::ToSchema;

/// Newest first; pass `next_cursor` as `cursor` for the next page (null: no more).
#[derive(Debug, Serialize, ToSchema)]
pub struct Page<T: ToSchema> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
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
