//! One claimed step: run by the executor under its deadline, with its heartbeat and
//! its progress reporter polled beside it.

use super::*;

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::job::JobInputs;
use super::report;
use crate::consumer::Context;
use crate::consumer::HandlerError;
use crate::consumer::answers::Answer;
use crate::domains::ai_tasks::parked;
use crate::domains::ai_tasks::store::{self, Task};
use crate::providers::{ExecError, Outcome, Report, vectorize};

/// The longest a step holds its worker to start a job that then parks (the kind's
/// deadline covers the whole wait, which may be hours).
const START_LIMIT: Duration = Duration::from_secs(600);

impl AiTaskHandler {
    /// Runs one claimed step with its heartbeat and progress reporter. `Ok(None)` when
    /// the task stopped being ours (canceled, re-driven); `Err` answers the message.
    /// `came_in`: the message's `traceparent`, which the next step continues while no
    /// span is made here.
    pub(super) async fn run_step(
        &self,
        ctx: &Context,
        c: Candidate,
        t: Task,
        came_in: Option<&str>,
    ) -> Result<Option<Ran>, Answer> {
        let Candidate {
            index, run, step, ..
        } = c;
        let fail = |e: HandlerError| Err((index, Err(e)));
        let kind = t.kind;
        let steps = kind.steps();
        let attempt = t.attempt;
        let stop = CancellationToken::new();
        let (tx, rx) = mpsc::unbounded_channel::<Report>();
        let inputs = JobInputs::of(&t, &self.ai);
        // A provider that parks its jobs may call back: its URL carries a fresh secret,
        // kept with the wait if the step parks. Steps on other providers make none.
        let parks = self.ai.parks(kind, step);
        let token = if parks {
            store::waits::new_token()
        } else {
            String::new()
        };
        let callback = parks
            .then(|| parked::callbacks::url(&self.ai, kind, step, &t.id, &token))
            .flatten();
        let job = inputs.job(&t, run.step, step, callback.as_deref());
        // A step that parks holds its worker only while the job is created.
        let hold = if parks {
            self.deadline(kind).min(START_LIMIT)
        } else {
            self.deadline(kind)
        };
        let step_run = async {
            let began = std::time::Instant::now();
            let outcome = tokio::time::timeout(hold, self.executor.start(&job, &tx, &stop)).await;
            stop.cancel();
            // Per-stage time of every kind's steps (seed 000), whatever the outcome; a step
            // that parks counts the start of its job only.
            metrics::histogram!("conveyor_task_step_seconds", "kind" => kind.as_str(), "step" => step)
                .record(began.elapsed().as_secs_f64());
            outcome
        };
        let beat = super::beats::Beat::new();
        let progress = report::report(
            &self.reports,
            report::Reported {
                id: &t.id,
                attempt,
                step_index: run.step,
                step,
                steps: steps.len() as i32,
                beat: &beat,
                text_every: Duration::from_millis(self.ai.stream_coalesce_ms),
            },
            rx,
            &stop,
        );
        let (outcome, (), ()) = tokio::join!(
            step_run,
            self.heartbeat(&t.id, attempt, &beat, &stop),
            progress
        );

        // The provider's own words (its URL, a slice of its answer) go to the log with
        // the task id; the tenant reads a stable code (see `public_error`).
        let output = match outcome {
            Err(_) => {
                return fail(HandlerError::transient(format!(
                    "deadline_exceeded: {step} took longer than its {} s deadline",
                    hold.as_secs()
                )));
            }
            Ok(Err(ExecError::Canceled)) => return Err((index, Ok(()))),
            Ok(Err(ExecError::Transient(e))) => {
                tracing::warn!(task_id = %t.id, attempt, step, error = %e, "provider failed");
                return fail(HandlerError::Transient(format!(
                    "provider_unavailable: the provider failed or timed out ({step}, attempt {attempt})"
                )));
            }
            Ok(Err(ExecError::Permanent(e))) => {
                tracing::warn!(task_id = %t.id, attempt, step, error = %e, "provider refused");
                return fail(HandlerError::Permanent(
                    super::failure::input_failure(&e, step).unwrap_or_else(|| {
                        format!("provider_rejected: the provider refused this request ({step})")
                    }),
                ));
            }
            Ok(Ok(Outcome::Parked(p))) => {
                let deadline_at = chrono::Utc::now()
                    + chrono::Duration::from_std(self.deadline(kind)).unwrap_or_default();
                return Err((index, self.park(ctx, &t, &p, &token, deadline_at).await));
            }
            Ok(Ok(Outcome::Done(v))) => v,
        };
        Ok(Some(Ran {
            index,
            run,
            task: t,
            step,
            output,
            previous: inputs.previous,
            trace: crate::traces::current_or(came_in),
        }))
    }
}

/// The stored result of a task whose last step produced `ran.output`: the output itself
/// for one-step kinds; every step's output and the last text for pipelines.
pub(super) fn final_result(ran: &Ran) -> serde_json::Value {
    if ran.task.kind.steps().len() > 1 {
        let mut all = ran.previous.as_object().cloned().unwrap_or_default();
        let mut output = ran.output.clone();
        // Written beside the material, not into the result.
        vectorize::take(&mut output);
        all.insert(ran.step.to_owned(), output);
        all.insert(
            "text".into(),
            ran.output.get("text").cloned().unwrap_or_default(),
        );
        serde_json::Value::Object(all)
    } else {
        ran.output.clone()
    }
}
