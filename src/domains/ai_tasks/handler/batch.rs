//! A batch of step messages: parsed, their tasks loaded, the fair-share rule applied,
//! the leases claimed, the steps run concurrently and committed in waves.

use super::*;
use std::collections::HashMap;

use chrono::Utc;
use futures::future::{BoxFuture, OptionFuture};
use futures::stream::FuturesUnordered;
use tracing::Instrument as _;

use crate::broker::Envelope;
use crate::consumer::answers::{Answer, Answers};
use crate::consumer::{Context, HandlerError};
use crate::domains::ai_tasks::messages::RunStep;
use crate::domains::ai_tasks::scheduling::waiting::Admitted;
use crate::domains::ai_tasks::store::{self, StepClaim, Task};

/// A step message whose task is waiting for that step.
pub(super) struct Candidate {
    pub(super) index: usize,
    pub(super) run: RunStep,
    pub(super) task: Task,
    pub(super) step: &'static str,
}

/// A claimed step whose executor answered.
pub(super) struct Ran {
    pub(super) index: usize,
    pub(super) run: RunStep,
    pub(super) task: Task,
    pub(super) step: &'static str,
    pub(super) output: serde_json::Value,
    pub(super) previous: serde_json::Value,
    /// The step span's `traceparent` (traces on): the next step's message continues it.
    pub(super) trace: Option<String>,
}

/// A step's span (traces on): the child of the span that sent its message, the parent
/// of its provider calls and progress pushes. Kind and step are in its name.
fn step_span(message: &Envelope, c: &Candidate) -> tracing::Span {
    if !crate::traces::on() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        "step",
        otel.name = %format_args!("step {}.{}", c.task.kind.as_str(), c.step),
        task_id = %c.task.id,
        attempt = c.task.attempt + 1,
    );
    crate::traces::adopt(&span, message.traceparent.as_deref());
    span
}

impl AiTaskHandler {
    /// Runs a batch of step messages (one message is a batch of one): tasks loaded in
    /// one query, the fair-share rule checked with one count, the leases claimed in one
    /// transaction, the steps run concurrently, and their results committed in waves:
    /// whatever finished while the previous commit ran goes in the next transaction, and
    /// those messages are answered then (the runtime acks them while the others still
    /// run). A slow step never holds back a quick one's result or ack; a result that
    /// cannot be committed with the others is committed alone.
    pub(super) async fn handle_many(
        &self,
        ctx: &Context,
        messages: &[Envelope],
        answers: &Answers,
    ) {
        // Answers known before any step runs are given at once: failures, and done for a
        // message with nothing to commit (finished or canceled task, a step already done,
        // a lease held elsewhere).
        let mut known: Vec<Option<Result<(), HandlerError>>> =
            messages.iter().map(|_| None).collect();
        let loaded = match self.candidates(ctx, messages, &mut known).await {
            Ok(c) => self.fair_share(ctx, c, &mut known).await,
            Err(e) => Err(e),
        };
        for (i, a) in known.into_iter().enumerate() {
            if let Some(a) = a {
                answers.give(i, a);
            }
        }
        let (candidates, admitted) = match loaded {
            Ok(c) => c,
            Err(e) => return answers.give_rest(|| Err(transient(format!("loading tasks: {e}")))),
        };
        let stale = Utc::now() - chrono::Duration::milliseconds(self.ai.stale_after_ms as i64);
        let wanted: Vec<StepClaim<'_>> = candidates
            .iter()
            .map(|c| StepClaim {
                id: &c.task.id,
                step_index: c.run.step,
                step: c.step,
            })
            .collect();
        let claimed = match store::claim_many(&ctx.db, &wanted, stale).await {
            Ok(c) => c,
            Err(e) => return answers.give_rest(|| Err(transient(&e))),
        };
        // The claims are in the table's counts now.
        drop(admitted);
        // Each RUNNING event in the trace of the message that claimed its task.
        let traced: HashMap<&str, &str> = candidates
            .iter()
            .filter_map(|c| {
                Some((
                    c.task.id.as_str(),
                    messages[c.index].traceparent.as_deref()?,
                ))
            })
            .collect();
        let events: Vec<crate::live::Event> = claimed
            .iter()
            .map(|(t, ev)| {
                ev.live()
                    .traced(traced.get(t.id.as_str()).map(|tp| (*tp).to_owned()))
            })
            .collect();
        drop(traced);
        crate::live::publish(ctx.broker.as_ref(), &events).await;
        let mut claimed: HashMap<String, Task> = claimed
            .into_iter()
            .map(|(t, _)| (t.id.clone(), t))
            .collect();
        let mut running = FuturesUnordered::new();
        for c in candidates {
            match claimed.remove(&c.task.id) {
                Some(task) => {
                    if c.task.started_at.is_none() {
                        crate::domains::ai_tasks::metrics::started(&task);
                    }
                    let message = &messages[c.index];
                    let span = step_span(message, &c);
                    let came_in = message.traceparent.as_deref();
                    running.push(self.run_step(ctx, c, task, came_in).instrument(span))
                }
                // Another consumer holds a live lease; if it dies the reaper re-drives.
                None => answers.give(c.index, Ok(())),
            }
        }
        // Commit in waves while the other steps keep running; each wave's messages are
        // answered when it commits.
        let mut finished: Vec<Ran> = Vec::new();
        let mut committing: Option<BoxFuture<'_, Vec<Answer>>> = None;
        loop {
            if committing.is_none() && !finished.is_empty() {
                committing = Some(self.commit(ctx, std::mem::take(&mut finished)).boxed());
            }
            tokio::select! {
                Some(done) = running.next(), if !running.is_empty() => {
                    let mut take = |done: Result<Option<Ran>, Answer>| match done {
                        Ok(Some(ran)) => finished.push(ran),
                        Ok(None) => {}
                        Err((i, answer)) => answers.give(i, answer),
                    };
                    take(done);
                    while let Some(Some(more)) = running.next().now_or_never() {
                        take(more);
                    }
                }
                Some(out) = OptionFuture::from(committing.as_mut()), if committing.is_some() => {
                    for (i, r) in out {
                        answers.give(i, r);
                    }
                    committing = None;
                }
                else => break,
            }
        }
    }

    /// Parses the messages and loads their tasks: the ones whose task waits for the
    /// message's step. Bad payloads and unknown tasks are answered permanent; finished
    /// tasks and steps that already committed (duplicates) are answered done.
    pub(super) async fn candidates(
        &self,
        ctx: &Context,
        messages: &[Envelope],
        answers: &mut [Option<Result<(), HandlerError>>],
    ) -> Result<Vec<Candidate>, sea_orm::DbErr> {
        let mut runs = Vec::with_capacity(messages.len());
        for (i, m) in messages.iter().enumerate() {
            match serde_json::from_value::<RunStep>(m.payload.clone()) {
                Ok(run) => runs.push((i, run)),
                Err(e) => {
                    answers[i] = Some(Err(HandlerError::permanent(format!(
                        "bad run-step payload: {e}"
                    ))))
                }
            }
        }
        let ids: Vec<&str> = runs.iter().map(|(_, r)| r.task_id.as_str()).collect();
        let mut tasks: HashMap<String, Task> = store::get_many(&ctx.db, &ids)
            .await?
            .into_iter()
            .map(|t| (t.id.clone(), t))
            .collect();
        let mut out = Vec::with_capacity(runs.len());
        for (i, run) in runs {
            // A second message for a task already in this batch is its duplicate.
            let Some(task) = tasks.remove(&run.task_id) else {
                let known = out.iter().any(|c: &Candidate| c.task.id == run.task_id);
                answers[i] = Some(if known {
                    Ok(())
                } else {
                    Err(HandlerError::permanent(format!(
                        "task {} does not exist",
                        run.task_id
                    )))
                });
                continue;
            };
            // The chaos harness's message that kills its consumer every time.
            #[cfg(feature = "failpoints")]
            if task.prompt.starts_with("chaos:crash") {
                crate::crash_point!("ai::crash_marked");
            }
            if task.status.is_terminal() || task.step_index != run.step {
                // Finished, canceled, or a duplicate of a step that already committed.
                answers[i] = Some(Ok(()));
                continue;
            }
            let step = task
                .kind
                .steps()
                .get(run.step as usize)
                .copied()
                .unwrap_or("generate");
            out.push(Candidate {
                index: i,
                run,
                task,
                step,
            });
        }
        Ok(out)
    }

    /// The fair share's verdict on the candidates (see [`scheduling::share`]): those
    /// admitted, and the admissions to hold until their claims are written; the others
    /// are answered with why they wait.
    ///
    /// [`scheduling::share`]: crate::domains::ai_tasks::scheduling::share
    async fn fair_share(
        &self,
        ctx: &Context,
        candidates: Vec<Candidate>,
        answers: &mut [Option<Result<(), HandlerError>>],
    ) -> Result<(Vec<Candidate>, Option<Admitted<'_>>), sea_orm::DbErr> {
        let tasks: Vec<&Task> = candidates.iter().map(|c| &c.task).collect();
        let (refused, admitted) = self.share.admit(&ctx.db, &tasks).await?;
        let mut kept = Vec::with_capacity(candidates.len());
        for (c, refusal) in candidates.into_iter().zip(refused) {
            match refusal {
                None => kept.push(c),
                Some(e) => answers[c.index] = Some(Err(e)),
            }
        }
        Ok((kept, admitted))
    }
}
