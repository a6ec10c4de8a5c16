//! Finding tasks over HTTP: the filter an owner's list and an admin's search share
//! (status, kind, creation time, a metadata `key:value`), checked into a
//! [`TaskFilter`](super::store::TaskFilter) with errors that name the field.

use serde::Deserialize;

use super::kinds::{Status, TaskKind};
use super::store::TaskFilter;
use crate::error::ApiError;

/// What to find.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FindQuery {
    /// Only tasks in this status (case-insensitive).
    #[param(value_type = Option<Status>)]
    #[schema(value_type = Option<Status>)]
    pub status: Option<String>,
    /// Only tasks of this kind.
    #[param(value_type = Option<TaskKind>)]
    #[schema(value_type = Option<TaskKind>)]
    pub kind: Option<String>,
    /// Only tasks created at or after this time (RFC 3339).
    #[param(value_type = Option<String>, format = DateTime)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub since: Option<String>,
    /// Only tasks created before this time (RFC 3339).
    #[param(value_type = Option<String>, format = DateTime)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub until: Option<String>,
    /// Only tasks submitted with this metadata: `key:value` (the first `:` splits; a key
    /// of 1 to 40 letters, digits, `_`, `-` or `.`, a value of at most 200 characters).
    #[param(max_length = 241, pattern = r"^[A-Za-z0-9_.-]{1,40}:[\s\S]{0,200}$")]
    #[schema(max_length = 241, pattern = r"^[A-Za-z0-9_.-]{1,40}:[\s\S]{0,200}$")]
    pub metadata: Option<String>,
    /// Admins only: one tenant's tasks.
    #[param(max_length = 64)]
    #[schema(max_length = 64)]
    pub user_id: Option<String>,
    /// `next_cursor` of the previous page (a task id).
    #[param(pattern = "^[0-9A-Za-z-]{1,64}$")]
    #[schema(pattern = "^[0-9A-Za-z-]{1,64}$")]
    pub cursor: Option<String>,
    /// Page size, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    #[schema(minimum = 1, maximum = 100)]
    pub limit: Option<u64>,
}

/// A page of tasks as the API shows them.
pub fn page(tasks: Vec<super::store::Task>, limit: u64) -> crate::api::Page<super::view::TaskView> {
    let items: Vec<super::view::TaskView> = tasks.into_iter().map(Into::into).collect();
    crate::api::Page::new(items, limit, |t| t.id.clone())
}

impl FindQuery {
    /// The filter it asks for (`user_id` taken only when `admin`).
    pub fn filter(&self, admin: bool) -> Result<TaskFilter, ApiError> {
        let status =
            match self.status.as_deref() {
                None => None,
                Some(s) => Some(Status::parse(&s.to_ascii_uppercase()).ok_or_else(|| {
                    ApiError::bad_request("status", format!("unknown status `{s}`"))
                })?),
            };
        let kind = match self.kind.as_deref() {
            None => None,
            Some(k) => Some(
                TaskKind::parse(k)
                    .ok_or_else(|| ApiError::bad_request("kind", format!("unknown kind `{k}`")))?,
            ),
        };
        let metadata = match self.metadata.as_deref() {
            None => None,
            Some(m) => {
                let (k, v) = super::metadata::term(m)
                    .map_err(|why| ApiError::bad_request("metadata", why))?;
                Some((k.to_owned(), v.to_owned()))
            }
        };
        crate::api::query::id_param("user_id", self.user_id.as_deref(), 64)?;
        if self.user_id.is_some() && !admin {
            return Err(ApiError::bad_request(
                "user_id",
                "only admins choose whose tasks to find (GET /v1/admin/tasks)",
            ));
        }
        Ok(TaskFilter {
            user_id: self.user_id.clone(),
            statuses: status.into_iter().collect(),
            kind,
            since: crate::api::query::time_param("since", self.since.as_deref())?,
            until: crate::api::query::time_param("until", self.until.as_deref())?,
            metadata,
            not_retried: false,
        })
    }
}
