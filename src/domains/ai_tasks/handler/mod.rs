//! The consumer side, a batch of step messages at a time: claim the tasks' leases, run
//! the steps with heartbeats and progress, and commit the results (in waves, with the
//! tasks' own state: a step commits only while the message's attempt holds it, so a
//! repeated message finds its step done and changes nothing).

mod batch;
pub mod beats;
mod check;
mod commit;
mod failure;
pub mod job;
mod park;
mod report;
pub mod report_writer;
mod step;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::{FutureExt as _, StreamExt as _};

use super::kinds::TaskKind;
use crate::broker::Envelope;
use crate::consumer::answers::{self, Answers};
use crate::consumer::{BatchHandler, Context, Fate, Fencing, HandlerError};
use crate::domains::ai_tasks::scheduling::share::FairShare;
use crate::domains::ai_tasks::settings::AiSettings;
use crate::outbox::Relay;
use crate::providers::Executor;

pub struct AiTaskHandler {
    pub ai: Arc<AiSettings>,
    pub executor: Arc<dyn Executor>,
    pub relay: Relay,
    pub max_payload: usize,
    /// The fair-share rules at claim time.
    pub share: FairShare,
    /// What every running step reports (progress, streamed text), written together.
    pub reports: report_writer::ReportWriter,
    /// Every running step's lease heartbeats, written together.
    pub beats: beats::BeatWriter,
    /// Where a task's end records its events (`crate::events`).
    pub events: crate::events::Events,
}

/// Minimum spacing of stored progress events of one task.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);
/// No progress is stored for a step that ends sooner than this after its start (its end
/// is written anyway): a quick step costs no progress writes.
const FIRST_PROGRESS_AFTER: Duration = Duration::from_millis(20);

fn transient(e: impl std::fmt::Display) -> HandlerError {
    HandlerError::transient(e)
}

use batch::*;
use step::*;

impl AiTaskHandler {
    fn deadline(&self, kind: TaskKind) -> Duration {
        Duration::from_secs(
            self.ai
                .kinds
                .get(kind.as_str())
                .map(|k| k.deadline_secs)
                .unwrap_or(60),
        )
    }
}

#[async_trait]
impl BatchHandler for AiTaskHandler {
    async fn handle_batch(
        &self,
        ctx: &Context,
        messages: &[Envelope],
    ) -> Vec<Result<(), HandlerError>> {
        answers::collect(self, ctx, messages)
            .await
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(transient("step left unanswered"))))
            .collect()
    }

    async fn handle_streaming(&self, ctx: &Context, messages: &[Envelope], answers: &Answers) {
        // The check queue's messages never share a batch with run messages (they come
        // from their own queue).
        if messages.iter().any(check::is_check) {
            for (i, answer) in self
                .handle_checks(ctx, messages)
                .await
                .into_iter()
                .enumerate()
            {
                answers.give(i, answer);
            }
            return;
        }
        self.handle_many(ctx, messages, answers).await
    }

    async fn on_failure(
        &self,
        ctx: &Context,
        msg: &Envelope,
        fate: &Fate,
    ) -> Result<(), HandlerError> {
        self.failed(ctx, msg, fate).await
    }

    /// A step commits only while the message's attempt holds the task at that step
    /// (`store::commit_steps`), so a repeated message finds its step done (or the task
    /// finished) and is answered done with no effect.
    fn fencing(&self) -> Fencing {
        Fencing::HandlerState
    }
}
