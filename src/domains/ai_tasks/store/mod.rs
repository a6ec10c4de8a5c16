//! The queries of the AI-task flow. Every state change is one conditional UPDATE
//! (`… WHERE status IN (…) [AND attempt = ?]`), so a transition happens at most once and a
//! stale attempt cannot write; it appends an event with the next sequence number in the
//! same transaction, and credits move with the transition that causes them.

mod beats;
mod claims;
mod lanes;
mod queries;
mod reports;
mod retry;
mod search;
mod settle;
mod steps;
mod submit;
#[cfg(test)]
mod tests;
mod transitions;
pub mod trim;
pub mod waits;

use sea_orm::DbErr;
use sea_orm::sea_query::ExprTrait as _;

use super::entity::task;
use crate::outbox::OutboxError;

pub use task::Model as Task;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("insufficient credits: {needed} needed, {balance} available")]
    InsufficientCredits { needed: i64, balance: i64 },
    /// The user already has `limit` tasks PENDING, PROCESSING or RETRYING.
    #[error("{limit} tasks already in flight")]
    TooManyInFlight { limit: u32 },
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

pub use beats::*;
pub use claims::*;
pub use lanes::*;
pub use queries::*;
pub use reports::*;
pub use retry::*;
pub use search::*;
pub use settle::*;
pub use steps::*;
pub use submit::*;
pub use transitions::*;
