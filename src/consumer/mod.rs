//! The consumer runtime: subscribe with prefetch = concurrency, decode, claim the message
//! id, run the handler, settle exactly once (ack, retry after a delay tier, or
//! dead-letter with a reason), and shut down without losing in-flight work.
//!
//! - [`process::process_one`] handles one delivery, deterministically, for tests;
//!   [`process::process_batch`] a batch of them for a [`BatchHandler`]; both admit
//!   (`admit`: decode, claim in the dedupe store, check the fence; one claim call per
//!   batch) and settle (`settle`: each message from its own result; a batch's successes
//!   together: one fence write, one dedupe call, acks coalesced per channel);
//! - [`run::run`] is the loop around them (one task per delivery, or per batch of up to
//!   `batch` deliveries gathered for at most `linger_ms`);
//! - [`fence`] is the database truth of "already processed", written in batches;
//! - [`deaths`] counts redeliveries per message id for the crash-loop quarantine.

mod admit;
mod admitted;
pub mod answers;
pub mod concurrency;
pub mod deaths;
pub mod fence;
pub mod fence_entity;
pub mod process;
pub mod run;
pub mod settings;
mod settle;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sea_orm::DatabaseConnection;

use crate::broker::{Broker, Envelope, QueueSpec};
use crate::dedupe::DedupeStore;

pub use answers::Answers;
pub use fence::Fence;
pub use process::{Outcome, process_batch, process_one};
pub use run::run;

/// What a handler's failure means for the message.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// Retrying may help (timeouts, 5xx, a busy dependency): retry after the next tier.
    #[error("transient: {0}")]
    Transient(String),
    /// Retrying cannot help (invalid payload, 4xx, business rule): dead-letter now.
    #[error("permanent: {0}")]
    Permanent(String),
    /// Not now, and not a failure (a fairness rule, a capacity limit): back on the second
    /// retry tier as it came, no attempt counted, no failure hook.
    #[error("deferred: {0}")]
    Deferred(String),
    /// Not now, but soon (another tenant's turn in a contended lane): back on the first
    /// retry tier as it came, no attempt counted, no failure hook.
    #[error("yielded: {0}")]
    Yielded(String),
}

impl HandlerError {
    pub fn transient(e: impl std::fmt::Display) -> Self {
        HandlerError::Transient(e.to_string())
    }
    pub fn permanent(e: impl std::fmt::Display) -> Self {
        HandlerError::Permanent(e.to_string())
    }
}

/// A message handler for one queue. It must be idempotent in its own state (conditional
/// transitions, unique keys): the runtime deduplicates, but a crash between the
/// handler's commit and the fence write re-runs it.
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    async fn handle(&self, ctx: &Context, message: &Envelope) -> Result<(), HandlerError>;

    /// Called after a failure, before the message is retried or dead-lettered, so the
    /// domain can record it (RETRYING; FAILED with a refund). An error hands the message
    /// back to the queue unsettled.
    async fn on_failure(
        &self,
        _ctx: &Context,
        _message: &Envelope,
        _fate: &Fate,
    ) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// A handler of batches: one call for up to `[queues.<key>] batch` deliveries, so the
/// handler can do one query or one request for all of them. It answers one result per
/// message; the runtime settles each message from its own result (ack, retry tier, dead
/// letter), so a message that fails does not take its neighbours with it; when the call
/// fails as a whole (a panic, messages left unanswered) each unanswered message is run
/// again alone, so only the one at fault fails. The same idempotence rule as
/// [`Handler`] applies.
///
/// A handler whose messages finish at different times (steps of varying length)
/// implements [`BatchHandler::handle_streaming`] and answers each as soon as it is
/// known: the runtime settles it then, so its prefetch slot does not wait for the
/// batch's slowest message.
#[async_trait]
pub trait BatchHandler: Send + Sync + 'static {
    async fn handle_batch(
        &self,
        ctx: &Context,
        messages: &[Envelope],
    ) -> Vec<Result<(), HandlerError>>;

    /// Handles the batch, giving each message's answer to `answers` as soon as it is
    /// known (by index in `messages`). The default answers all at once from
    /// [`BatchHandler::handle_batch`]; a result of the wrong length leaves the messages
    /// it does not cover unanswered.
    async fn handle_streaming(&self, ctx: &Context, messages: &[Envelope], answers: &Answers) {
        for (i, r) in self
            .handle_batch(ctx, messages)
            .await
            .into_iter()
            .enumerate()
        {
            answers.give(i, r);
        }
    }

    /// Who keeps a repeated message from having its effect twice, beside the dedupe
    /// store (see [`Fencing`]).
    fn fencing(&self) -> Fencing {
        Fencing::Runtime
    }

    /// As [`Handler::on_failure`], per failed message.
    async fn on_failure(
        &self,
        _ctx: &Context,
        _message: &Envelope,
        _fate: &Fate,
    ) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// Who keeps a message that comes again (a redelivery after a crash, a replay) from
/// having its effect twice, beside the dedupe store (which forgets, and can be away).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fencing {
    /// The runtime: it checks the database fence before the handler and writes the
    /// message's row after an `Ok`.
    Runtime,
    /// The handler writes the fence row of every message it answers `Ok`, in the
    /// transaction that commits its effect ([`fence::mark_many_in`]) or on its own when
    /// there was nothing to commit; the runtime only checks. One statement and one
    /// commit less per message than `Runtime`, and no window between the two commits.
    InHandlerTransaction,
    /// The handler's own state: every effect is a conditional write that a repeated
    /// message finds already done (a task's step guarded by its attempt and step
    /// index), so a repeat is answered `Ok` with no effect. The runtime neither checks
    /// nor writes the fence for this queue.
    HandlerState,
}

/// The consumer of one queue: one message per call, or batches.
#[derive(Clone)]
pub enum Worker {
    One(Arc<dyn Handler>),
    Batch(Arc<dyn BatchHandler>),
}

/// What happens to a message whose handler failed.
#[derive(Debug, Clone)]
pub enum Fate {
    Retry {
        next_attempt: u32,
        error: String,
    },
    DeadLetter {
        reason: crate::broker::DeadReason,
        error: String,
    },
}

/// What a handler can reach.
#[derive(Clone)]
pub struct Context {
    pub db: DatabaseConnection,
    pub broker: Arc<dyn Broker>,
    pub queue: &'static QueueSpec,
}

/// Everything the runtime needs, shared by all consumers of a process.
#[derive(Clone)]
pub struct Deps {
    pub db: DatabaseConnection,
    pub broker: Arc<dyn Broker>,
    pub dedupe: Arc<dyn DedupeStore>,
    /// The database fence; `None` trusts the dedupe store alone (benchmarks of the bare
    /// core). A handler fenced by its own state says so instead ([`Fencing`]).
    pub fence: Option<Fence>,
    pub lease: Duration,
    pub done_ttl: Duration,
    pub max_payload_bytes: usize,
    pub shutdown_grace: Duration,
    /// Redeliveries after which a message is quarantined (`crash_loop`); 0 = never.
    pub crash_loop_after: u32,
    /// Replays after which a letter that dies again is parked as `needs_fix` (0: never).
    pub needs_fix_after: u32,
    /// How often a consumer reads its queue's concurrency set at run time.
    pub settings_poll: Duration,
    /// Per-queue totals and consumers, for this process's ops report.
    pub tally: Arc<crate::tally::Tally>,
}

impl Deps {
    /// The database fence the runtime reads before a handler fenced as `fencing` runs:
    /// none when the handler's own state fences its messages.
    pub(crate) fn fence_to_read(&self, fencing: Fencing) -> Option<&Fence> {
        self.fence
            .as_ref()
            .filter(|_| fencing != Fencing::HandlerState)
    }

    /// The database fence the runtime writes after such a handler succeeds: only when
    /// the runtime is the one fencing.
    pub(crate) fn fence_to_write(&self, fencing: Fencing) -> Option<&Fence> {
        self.fence.as_ref().filter(|_| fencing == Fencing::Runtime)
    }

    /// What a handler of `queue` can reach.
    pub fn context(&self, queue: &'static QueueSpec) -> Context {
        Context {
            db: self.db.clone(),
            broker: self.broker.clone(),
            queue,
        }
    }
}

/// The processed-message fence and the crash-loop counters are kept `days`
/// (`consumer.fence_retention_days`: longer than any redelivery or replay window, see
/// config/base.toml), then trimmed.
pub fn retention(days: u32) -> [crate::housekeeping::Retention; 2] {
    let keep = Duration::from_secs(u64::from(days) * 24 * 3600);
    [
        crate::housekeeping::Retention {
            table: "processed_messages",
            keep,
            trim: |db, cutoff| {
                Box::pin(async move {
                    use sea_orm::{ColumnTrait as _, EntityTrait as _, QueryFilter as _};
                    Ok(fence_entity::Entity::delete_many()
                        .filter(fence_entity::Column::ProcessedAt.lt(cutoff))
                        .exec(db)
                        .await?
                        .rows_affected)
                })
            },
        },
        crate::housekeeping::Retention {
            table: "message_deaths",
            keep,
            trim: |db, cutoff| {
                Box::pin(async move {
                    use sea_orm::{ColumnTrait as _, EntityTrait as _, QueryFilter as _};
                    Ok(deaths::entity::Entity::delete_many()
                        .filter(deaths::entity::Column::UpdatedAt.lt(cutoff))
                        .exec(db)
                        .await?
                        .rows_affected)
                })
            },
        },
    ]
}
