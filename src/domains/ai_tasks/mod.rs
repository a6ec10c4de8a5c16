//! AI generation tasks, end to end.
//!
//! `POST /v1/tasks` reserves the kind's credits, inserts the task (PENDING) and writes
//! its run message to the outbox in one transaction, and answers 202. A consumer claims
//! the task's lease (PROCESSING, attempt + 1), runs the step through an [`executor`]
//! with a heartbeat and progress events, and commits the result (SUCCESS, a material, a
//! search-sync message, the reservation consumed) only while it still holds the lease.
//! Failures go RETRYING (retry tier) or FAILED (dead letter) with a refund; cancel goes
//! CANCELED with a refund; the [`reaper`] re-drives tasks whose consumer died.
//! `video_analysis` runs its steps as separate messages, each published only after
//! the previous step committed.

pub mod entity;
pub mod executor;
pub mod handler;
pub mod kinds;
pub mod messages;
pub mod metrics;
pub mod reaper;
pub mod routes;
pub mod store;
pub mod submitter;

pub use handler::AiTaskHandler;
pub use kinds::{Status, TaskKind};
pub use routes::routes;
