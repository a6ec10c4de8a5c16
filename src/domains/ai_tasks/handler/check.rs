//! The `ai.check` queue: checks of parked provider jobs and provider cancels. A check
//! reads its wait and task; one that is stale (the wait moved past it, the task ended,
//! another attempt holds it) changes nothing. Otherwise it enforces the deadline
//! (cancel at the provider, fail with a refund), or polls the provider: still running
//! re-parks (the next check on its delay queue, progress as an event), finished commits
//! the step like any other (outputs already stored), failed fails the task.

use super::*;

use chrono::Utc;
use futures::future::join_all;
use tracing::Instrument as _;

use super::job::JobInputs;
use crate::broker::{Envelope, Target};
use crate::consumer::{Context, HandlerError};
use crate::domains::ai_tasks::entity::wait::APPROVAL;
use crate::domains::ai_tasks::kinds::Status;
use crate::domains::ai_tasks::messages::{
    CANCEL_JOB, CHECK_STEP, CancelJob, CheckStep, RunStep, publish_events,
};
use crate::domains::ai_tasks::parked::approval;
use crate::domains::ai_tasks::parked::store::{self as parking, check_message};
use crate::domains::ai_tasks::queues::check_delay;
use crate::domains::ai_tasks::store::{self, waits::Wait};
use crate::providers::{ExecError, Outcome};

/// Counts a check by what it found.
fn checked(outcome: &'static str) {
    metrics::counter!("conveyor_ai_checks_total", "outcome" => outcome).increment(1);
}

/// Whether a message belongs to the check queue's handler.
pub(super) fn is_check(m: &Envelope) -> bool {
    m.kind == CHECK_STEP || m.kind == CANCEL_JOB
}

impl AiTaskHandler {
    /// Answers a batch of the check queue, each message on its own.
    pub(super) async fn handle_checks(
        &self,
        ctx: &Context,
        messages: &[Envelope],
    ) -> Vec<Result<(), HandlerError>> {
        join_all(messages.iter().map(|m| {
            // A check continues the trace of the step that parked (traces on).
            let span = if crate::traces::on() {
                let span = tracing::info_span!("check", otel.name = %format_args!("{} {}", m.kind, m.correlation_id.as_deref().unwrap_or("")), kind = %m.kind);
                crate::traces::adopt(&span, m.traceparent.as_deref());
                span
            } else {
                tracing::Span::none()
            };
            async move {
            match m.kind.as_str() {
                CHECK_STEP => match serde_json::from_value::<CheckStep>(m.payload.clone()) {
                    Ok(c) => self.check_one(ctx, &c, m.traceparent.as_deref()).await,
                    Err(e) => Err(HandlerError::permanent(format!("bad check payload: {e}"))),
                },
                CANCEL_JOB => match serde_json::from_value::<CancelJob>(m.payload.clone()) {
                    Ok(c) => self.cancel_job(&c).await,
                    Err(e) => Err(HandlerError::permanent(format!("bad cancel payload: {e}"))),
                },
                other => Err(HandlerError::permanent(format!(
                    "a {other} message on the check queue"
                ))),
            }
            }
            .instrument(span)
        }))
        .await
    }

    async fn cancel_job(&self, c: &CancelJob) -> Result<(), HandlerError> {
        match self.executor.cancel_job(&c.provider, &c.handle).await {
            Ok(()) => Ok(()),
            // A job already finished or gone cannot be canceled: nothing to do.
            Err(ExecError::Permanent(e)) => {
                tracing::info!(task_id = %c.task_id, job = %c.handle, error = %e, "provider refused the cancel");
                Ok(())
            }
            Err(e) => Err(transient(e)),
        }
    }

    /// `came_in`: the check message's `traceparent` (see [`crate::traces::current_or`]).
    async fn check_one(
        &self,
        ctx: &Context,
        c: &CheckStep,
        came_in: Option<&str>,
    ) -> Result<(), HandlerError> {
        let (Some(w), Some(t)) = (
            store::waits::get(&ctx.db, &c.task_id)
                .await
                .map_err(transient)?,
            store::get(&ctx.db, &c.task_id).await.map_err(transient)?,
        ) else {
            return Ok(());
        };
        if w.attempt != c.attempt || w.checks != c.checks {
            checked("stale");
            return Ok(());
        }
        if t.status != Status::Waiting || t.attempt != w.attempt || t.step_index != w.step_index {
            // The task ended or moved on without its wait (a cancel removes it; this is
            // what an older build or a crash left).
            if t.status.is_terminal() {
                store::waits::forget(&ctx.db, &t.id)
                    .await
                    .map_err(transient)?;
            }
            checked("stale");
            return Ok(());
        }
        if w.waiting_for == APPROVAL {
            return self.approval_due(ctx, &w).await;
        }
        let step = t
            .kind
            .steps()
            .get(t.step_index as usize)
            .copied()
            .unwrap_or("generate");
        if Utc::now() >= w.deadline_at {
            checked("deadline");
            let _ = self
                .executor
                .cancel_job(&w.provider, w.job.as_deref().unwrap_or(""))
                .await;
            let secs = self
                .ai
                .kinds
                .get(t.kind.as_str())
                .map_or(0, |k| k.deadline_secs);
            let error = format!("deadline_exceeded: {step} took longer than its {secs} s deadline");
            return self.end_wait(ctx, &w, Status::Failed, error).await;
        }
        let inputs = JobInputs::of(&t, &self.ai);
        let job = inputs.job(&t, t.step_index, step, None);
        let handle = w.job.clone().unwrap_or_default();
        let cancel = tokio_util::sync::CancellationToken::new();
        match self
            .executor
            .check(&w.provider, &job, &handle, &cancel)
            .await
        {
            Ok(Outcome::Parked(p)) => {
                checked("running");
                let progress = p
                    .progress
                    .map(|pct| parking::overall(&t, pct))
                    .filter(|pct| *pct != t.progress)
                    .map(|pct| (pct, p.message.clone()));
                self.repark(ctx, &w, progress, came_in).await
            }
            Ok(Outcome::Done(output)) => {
                checked("succeeded");
                let ran = Ran {
                    index: 0,
                    run: RunStep {
                        task_id: t.id.clone(),
                        step: t.step_index,
                    },
                    step,
                    output,
                    previous: inputs.previous.clone(),
                    task: t.clone(),
                    trace: crate::traces::current_or(came_in),
                };
                match self.commit(ctx, vec![ran]).await.pop() {
                    Some((_, answer)) => answer,
                    None => Ok(()),
                }
            }
            // The provider could not be asked: try again at the next check (the
            // deadline bounds how long).
            Err(ExecError::Transient(e)) => {
                checked("unreachable");
                tracing::warn!(task_id = %t.id, job = %handle, error = %e, "checking a parked job failed");
                self.repark(ctx, &w, None, came_in).await
            }
            Err(ExecError::Permanent(e)) => {
                checked("failed");
                tracing::warn!(task_id = %t.id, job = %handle, error = %e, "parked job failed");
                let error = format!("provider_rejected: the provider's job failed ({step})");
                self.end_wait(ctx, &w, Status::Failed, error).await
            }
            Err(ExecError::Canceled) => Ok(()),
        }
    }

    /// Moves the wait past this check and sends the next on its delay queue. Sent
    /// straight to the broker, not through the outbox: if it is lost, the wait's
    /// `check_at` is overdue and the sweep sends another.
    async fn repark(
        &self,
        ctx: &Context,
        w: &Wait,
        progress: Option<(i32, Option<String>)>,
        came_in: Option<&str>,
    ) -> Result<(), HandlerError> {
        let delay = check_delay(w.checks + 1);
        let after = ctx.broker.topology().delay(delay).delay;
        let next = Utc::now() + chrono::Duration::from_std(after).unwrap_or_default();
        let Some(event) = parking::repark(&ctx.db, &self.events, w, next, progress)
            .await
            .map_err(transient)?
        else {
            return Ok(());
        };
        let mut message = check_message(&w.task_id, w.attempt, w.checks + 1);
        message.traceparent = crate::traces::current_or(came_in);
        if let Err(e) = ctx.broker.publish(Target::Delay(delay), &message).await {
            tracing::warn!(task_id = %w.task_id, error = %e, "sending the next check failed; the sweep will");
        }
        if let Some(ev) = event {
            publish_events(ctx.broker.as_ref(), &[ev]).await;
        }
        Ok(())
    }

    /// Ends a wait with `status` and `error` (refunded), and publishes its event.
    pub(super) async fn end_wait(
        &self,
        ctx: &Context,
        w: &Wait,
        status: Status,
        error: String,
    ) -> Result<(), HandlerError> {
        if let Some((_, ev)) = parking::end(&ctx.db, &self.events, w, status, error)
            .await
            .map_err(transient)?
        {
            publish_events(ctx.broker.as_ref(), &[ev]).await;
        }
        Ok(())
    }

    /// An approval's wait came due: past its deadline, the step is rejected.
    async fn approval_due(&self, ctx: &Context, w: &Wait) -> Result<(), HandlerError> {
        if Utc::now() < w.deadline_at {
            return Ok(());
        }
        let reason = format!(
            "approval_timeout: no decision within {} s",
            (w.deadline_at - w.parked_at).num_seconds()
        );
        let percent = self.ai.cancel_refund_started_percent;
        let events = &self.events;
        if let Some((_, ev, _)) = approval::reject(&ctx.db, events, w, reason, "timeout", percent)
            .await
            .map_err(transient)?
        {
            publish_events(ctx.broker.as_ref(), &[ev]).await;
        }
        Ok(())
    }
}
