//! One claimed step: run by the executor under its deadline, with its heartbeat and
//! its progress reporter polled beside it.

use super::*;

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::report;
use crate::consumer::HandlerError;
use crate::consumer::answers::Answer;
use crate::domains::ai_tasks::executor::{ExecError, Job, Report};
use crate::domains::ai_tasks::store::Task;

impl AiTaskHandler {
    /// Runs one claimed step with its heartbeat and progress reporter. `Ok(None)` when
    /// the task stopped being ours (canceled, re-driven); `Err` answers the message.
    pub(super) async fn run_step(&self, c: Candidate, t: Task) -> Result<Option<Ran>, Answer> {
        let Candidate {
            index, run, step, ..
        } = c;
        let fail = |e: HandlerError| Err((index, Err(e)));
        let kind = t.kind;
        let steps = kind.steps();
        let attempt = t.attempt;
        let stop = CancellationToken::new();
        let (tx, rx) = mpsc::unbounded_channel::<Report>();
        let previous: serde_json::Value = t
            .result
            .as_deref()
            .and_then(|r| serde_json::from_str(r).ok())
            .unwrap_or_default();
        let params: serde_json::Value = serde_json::from_str(&t.params).unwrap_or_default();
        let job = Job {
            task_id: &t.id,
            user_id: &t.user_id,
            kind,
            step,
            step_index: run.step as usize,
            prompt: &t.prompt,
            params: &params,
            attempt,
            previous: &previous,
            max_output_tokens: self
                .ai
                .kinds
                .get(kind.as_str())
                .and_then(|k| k.pricing)
                .map(|p| p.max_output_tokens),
        };
        // The step, its heartbeat and its progress reporter in this one future: if it is
        // dropped (consumer killed, shutdown), the heartbeat stops with it and the lease
        // goes stale for the reaper. Both end when the step does (`stop`).
        let step_run = async {
            let outcome =
                tokio::time::timeout(self.deadline(kind), self.executor.run(&job, &tx, &stop))
                    .await;
            stop.cancel();
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
                    self.deadline(kind).as_secs()
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
                return fail(HandlerError::Permanent(format!(
                    "provider_rejected: the provider refused this request ({step})"
                )));
            }
            Ok(Ok(v)) => v,
        };
        Ok(Some(Ran {
            index,
            run,
            task: t,
            step,
            output,
            previous,
        }))
    }
}

/// The stored result of a task whose last step produced `ran.output`: the output itself
/// for one-step kinds; every step's output and the last text for pipelines.
pub(super) fn final_result(ran: &Ran) -> serde_json::Value {
    if ran.task.kind.steps().len() > 1 {
        let mut all = ran.previous.as_object().cloned().unwrap_or_default();
        all.insert(ran.step.to_owned(), ran.output.clone());
        all.insert(
            "text".into(),
            ran.output.get("text").cloned().unwrap_or_default(),
        );
        serde_json::Value::Object(all)
    } else {
        ran.output.clone()
    }
}
