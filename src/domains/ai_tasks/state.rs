//! The task routes' state, and the one rule every route that names a task follows: the
//! caller sees their own tasks (admins every task); anyone else's is 404.

use std::sync::Arc;

use axum::extract::FromRef;

use super::scheduling::shedding::Shedding;
use super::settings::AiSettings;
use super::store::{self, Task};
use super::submitter::Submitter;
use crate::api::Core;
use crate::error::ApiError;

/// The task routes' state.
#[derive(Clone, FromRef)]
pub struct Tasks {
    pub core: Core,
    pub ai: Arc<AiSettings>,
    /// Group-commits submissions without an idempotency key.
    pub submitter: Submitter,
    /// Sheds some kinds while the video-analysis pipeline is far behind.
    pub shedding: Shedding,
    /// Where a task's end records its events (`crate::events`).
    pub events: crate::events::Events,
}

/// The task if the caller may see it; 404 otherwise (never "forbidden": existence is private).
pub(crate) async fn visible(
    state: &Tasks,
    user: &crate::users::User,
    id: &str,
) -> Result<Task, ApiError> {
    match store::get(&state.core.db, id).await? {
        Some(t) if user.can_see(&t.user_id) => Ok(t),
        _ => Err(ApiError::not_found("task")),
    }
}
