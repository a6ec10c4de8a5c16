//! The consumer side, a batch of step messages at a time: claim the tasks' leases, run
//! the steps with heartbeats and progress, and commit the results (in waves, with the
//! tasks' own state: a step commits only while the message's attempt holds it, so a
//! repeated message finds its step done and changes nothing).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use futures::future::{BoxFuture, OptionFuture};
use futures::stream::FuturesUnordered;
use futures::{FutureExt as _, StreamExt as _};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, TransactionTrait};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::entity::task;
use super::executor::{ExecError, Executor, Job};
use super::kinds::{Status, TaskKind};
use super::messages::{RunStep, TaskEvent, publish_events};
use super::store::{self, Change, Guard, StepClaim, StepResult, Task};
use crate::broker::{DeadReason, Envelope};
use crate::consumer::answers::{self, Answer, Answers};
use crate::consumer::{BatchHandler, Context, Fate, Fencing, HandlerError};
use crate::domains::ai_tasks::settings::AiSettings;
use crate::outbox::Relay;

pub struct AiTaskHandler {
    pub ai: Arc<AiSettings>,
    pub executor: Arc<dyn Executor>,
    pub relay: Relay,
    pub max_payload: usize,
    /// For the fair-share rule at claim time (`limits.tasks_running`, per-user overrides).
    /// `limits.tasks_running` as configured (overrides per user on top).
    pub running_cap: u32,
    pub overrides: Arc<crate::limits::overrides::Cache>,
}

/// Minimum spacing of stored progress events of one task.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);
/// No progress is stored for a step that ends sooner than this after its start (its end
/// is written anyway): a quick step costs no progress writes.
const FIRST_PROGRESS_AFTER: Duration = Duration::from_millis(20);

fn transient(e: impl std::fmt::Display) -> HandlerError {
    HandlerError::transient(e)
}

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

    /// Keeps the lease fresh; cancels `stop` when the task is no longer ours (canceled,
    /// or re-driven to another attempt).
    /// Runs until `stop`; polled beside the step (not spawned: a quick step costs no task).
    async fn heartbeat(
        &self,
        db: &DatabaseConnection,
        id: &str,
        attempt: i32,
        stop: &CancellationToken,
    ) {
        let every = Duration::from_millis(self.ai.heartbeat_ms);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
            let beat = task::Entity::update_many()
                .col_expr(task::Column::HeartbeatAt, Expr::value(Utc::now()))
                .filter(task::Column::Id.eq(id))
                .filter(task::Column::Attempt.eq(attempt))
                .filter(store::status_among(&[Status::Processing]))
                .exec(db)
                .await;
            match beat {
                Ok(r) if r.rows_affected == 0 => {
                    tracing::info!(task = %id, attempt, "task no longer ours (canceled or re-driven); stopping");
                    stop.cancel();
                    return;
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(task = %id, error = %e, "heartbeat failed"),
            }
        }
    }
}

/// A step message whose task is waiting for that step.
struct Candidate {
    index: usize,
    run: RunStep,
    task: Task,
    step: &'static str,
}

/// A claimed step whose executor answered.
struct Ran {
    index: usize,
    run: RunStep,
    task: Task,
    step: &'static str,
    output: serde_json::Value,
    previous: serde_json::Value,
}

impl AiTaskHandler {
    /// Runs a batch of step messages (one message is a batch of one): tasks loaded in
    /// one query, the fair-share rule checked with one count, the leases claimed in one
    /// transaction, the steps run concurrently, and their results committed in waves:
    /// whatever finished while the previous commit ran goes in the next transaction, and
    /// those messages are answered then (the runtime acks them while the others still
    /// run). A slow step never holds back a quick one's result or ack; a result that
    /// cannot be committed with the others is committed alone.
    async fn handle_many(&self, ctx: &Context, messages: &[Envelope], answers: &Answers) {
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
        let candidates = match loaded {
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
        publish_events(
            ctx.broker.as_ref(),
            &claimed.iter().map(|(_, ev)| ev.clone()).collect::<Vec<_>>(),
        )
        .await;
        let mut claimed: HashMap<String, Task> = claimed
            .into_iter()
            .map(|(t, _)| (t.id.clone(), t))
            .collect();
        let mut running = FuturesUnordered::new();
        for c in candidates {
            match claimed.remove(&c.task.id) {
                Some(task) => running.push(self.run_step(ctx, c, task)),
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
    async fn candidates(
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

    /// Fair share: a tenant already running its share waits (not a failure), so its
    /// backlog cannot take every worker from the others. Counted once for the batch's
    /// tenants; the batch's own claims count toward their share.
    async fn fair_share(
        &self,
        ctx: &Context,
        candidates: Vec<Candidate>,
        answers: &mut [Option<Result<(), HandlerError>>],
    ) -> Result<Vec<Candidate>, sea_orm::DbErr> {
        let mut caps: HashMap<String, u32> = HashMap::new();
        for c in &candidates {
            if c.task.status != Status::Processing && !caps.contains_key(&c.task.user_id) {
                let cap = self
                    .overrides
                    .get(&ctx.db, &c.task.user_id)
                    .await
                    .value(&super::limits::RUNNING, self.running_cap);
                caps.insert(c.task.user_id.clone(), cap);
            }
        }
        caps.retain(|_, cap| *cap > 0);
        if caps.is_empty() {
            return Ok(candidates);
        }
        let users: Vec<&str> = caps.keys().map(String::as_str).collect();
        let mut running = store::running_by_user(&ctx.db, &users).await?;
        let mut admitted = Vec::with_capacity(candidates.len());
        for c in candidates {
            let cap = match caps.get(&c.task.user_id) {
                Some(cap) if c.task.status != Status::Processing => *cap,
                _ => {
                    admitted.push(c);
                    continue;
                }
            };
            let n = running.entry(c.task.user_id.clone()).or_default();
            if *n >= u64::from(cap) {
                answers[c.index] = Some(Err(HandlerError::Deferred(format!(
                    "tenant already runs {n} tasks (limits.tasks_running {cap})"
                ))));
            } else {
                *n += 1;
                admitted.push(c);
            }
        }
        Ok(admitted)
    }

    /// Runs one claimed step with its heartbeat and progress reporter. `Ok(None)` when
    /// the task stopped being ours (canceled, re-driven); `Err` answers the message.
    async fn run_step(&self, ctx: &Context, c: Candidate, t: Task) -> Result<Option<Ran>, Answer> {
        let Candidate {
            index, run, step, ..
        } = c;
        let fail = |e: HandlerError| Err((index, Err(e)));
        let kind = t.kind;
        let steps = kind.steps();
        let attempt = t.attempt;
        let stop = CancellationToken::new();
        let (tx, rx) = mpsc::unbounded_channel::<(i32, Option<String>)>();
        let previous: serde_json::Value = t
            .result
            .as_deref()
            .and_then(|r| serde_json::from_str(r).ok())
            .unwrap_or_default();
        let params: serde_json::Value = serde_json::from_str(&t.params).unwrap_or_default();
        let job = Job {
            task_id: &t.id,
            kind,
            step,
            step_index: run.step as usize,
            prompt: &t.prompt,
            params: &params,
            attempt,
            previous: &previous,
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
        let progress = report_progress(
            ctx,
            &t.id,
            attempt,
            run.step,
            step,
            steps.len() as i32,
            rx,
            &stop,
        );
        let (outcome, (), ()) = tokio::join!(
            step_run,
            self.heartbeat(&ctx.db, &t.id, attempt, &stop),
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

    /// Commits the results of `wave` in one transaction, then publishes their events. If
    /// the transaction fails, each result is committed alone, so one bad row does not
    /// fail its neighbours.
    async fn commit(&self, ctx: &Context, wave: Vec<Ran>) -> Vec<Answer> {
        // The provider was paid for, nothing is committed yet.
        crate::crash_point!("ai::before_commit");
        let (committed, answers) = match self.commit_together(ctx, &wave).await {
            Ok(c) => (c, wave.iter().map(|r| (r.index, Ok(()))).collect()),
            Err(e) if wave.len() == 1 => return vec![(wave[0].index, Err(transient(&e)))],
            Err(e) => {
                tracing::warn!(size = wave.len(), error = %e, "committing a wave of results failed; committing them one by one");
                let mut committed = Vec::new();
                let mut answers = Vec::with_capacity(wave.len());
                for ran in &wave {
                    let one = self.commit_together(ctx, std::slice::from_ref(ran)).await;
                    answers.push((
                        ran.index,
                        one.map(|c| committed.extend(c)).map_err(transient),
                    ));
                }
                (committed, answers)
            }
        };
        self.after_commit(ctx, &committed).await;
        answers
    }

    /// One transaction for `wave`: each step's result (the task's next step through the
    /// outbox, or its success with credits and material). The committed tasks, their
    /// events, and whether each was the last step.
    async fn commit_together(
        &self,
        ctx: &Context,
        wave: &[Ran],
    ) -> Result<Vec<(Task, TaskEvent, bool)>, store::StoreError> {
        let txn = ctx.db.begin().await?;
        let results: Vec<StepResult<'_>> = wave
            .iter()
            .map(|ran| {
                let last = ran.run.step as usize + 1 >= ran.task.kind.steps().len();
                StepResult {
                    task: &ran.task,
                    step: ran.step,
                    result: if last {
                        final_result(ran)
                    } else {
                        let mut all = ran.previous.as_object().cloned().unwrap_or_default();
                        all.insert(ran.step.to_owned(), ran.output.clone());
                        serde_json::Value::Object(all)
                    },
                    last,
                }
            })
            .collect();
        let applied = store::commit_steps(&txn, &results, self.max_payload).await?;
        let mut committed = Vec::with_capacity(wave.len());
        // `None`: fenced out (canceled meanwhile, or re-driven to a newer attempt): the
        // result is discarded, the message done all the same.
        for (r, a) in results.iter().zip(applied) {
            if let Some((now, ev)) = a {
                committed.push((now, ev, r.last));
            }
        }
        txn.commit().await?;
        Ok(committed)
    }

    async fn after_commit(&self, ctx: &Context, committed: &[(Task, TaskEvent, bool)]) {
        if committed.is_empty() {
            return;
        }
        for (now, _, last) in committed {
            if *last {
                super::metrics::finished(now);
            }
        }
        self.relay.notify();
        let events: Vec<TaskEvent> = committed.iter().map(|(_, ev, _)| ev.clone()).collect();
        publish_events(ctx.broker.as_ref(), &events).await;
    }
}

/// The stored result of a task whose last step produced `ran.output`: the output itself
/// for one-step kinds; every step's output and the last text for pipelines.
fn final_result(ran: &Ran) -> serde_json::Value {
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

/// Writes a step's progress while it runs, at most every [`PROGRESS_EVERY`]: ticks in
/// between are coalesced (latest wins), a progress bar needs no more and the database
/// less. The first write waits [`FIRST_PROGRESS_AFTER`] from the step's start, so a step
/// that ends sooner writes no progress at all; once the step ended (or the task is no
/// longer ours) nothing more is written: the step's own end records its state.
#[allow(clippy::too_many_arguments)]
async fn report_progress(
    ctx: &Context,
    id: &str,
    attempt: i32,
    step_index: i32,
    step: &'static str,
    steps: i32,
    mut rx: mpsc::UnboundedReceiver<(i32, Option<String>)>,
    ended: &CancellationToken,
) {
    let mut next_write = tokio::time::Instant::now() + FIRST_PROGRESS_AFTER;
    loop {
        let (mut pct, mut message) = tokio::select! {
            got = rx.recv() => match got {
                Some(tick) => tick,
                None => return,
            },
            _ = ended.cancelled() => return,
        };
        if tokio::time::Instant::now() < next_write {
            tokio::select! {
                _ = tokio::time::sleep_until(next_write) => {}
                _ = ended.cancelled() => return,
            }
        }
        while let Ok((p, m)) = rx.try_recv() {
            (pct, message) = (p, m);
        }
        if ended.is_cancelled() {
            return;
        }
        next_write = tokio::time::Instant::now() + PROGRESS_EVERY;
        let g = Guard::holder(attempt).at_step(step_index);
        let change = Change {
            progress: Some(((step_index * 100 + pct) / steps).min(99)),
            step: Some(step.to_owned()),
            message,
            ..Default::default()
        };
        if let Ok(Some((_, ev))) = store::apply_now(&ctx.db, id, &g, change).await {
            publish_events(ctx.broker.as_ref(), &[ev]).await;
        }
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

impl AiTaskHandler {
    /// Records a failed step: RETRYING, or FAILED with its refund.
    async fn failed(&self, ctx: &Context, msg: &Envelope, fate: &Fate) -> Result<(), HandlerError> {
        let Ok(run) = serde_json::from_value::<RunStep>(msg.payload.clone()) else {
            return Ok(());
        };
        let event = match fate {
            Fate::Retry {
                error,
                next_attempt,
            } => {
                let error = &public_error(&run.task_id, error);
                let g = Guard::status(&[Status::Processing]).at_step(run.step);
                let change = Change {
                    status: Some(Status::Retrying),
                    release_lease: true,
                    error: Some(error.clone()),
                    message: Some(format!("retrying (attempt {next_attempt}): {error}")),
                    ..Default::default()
                };
                store::apply_now(&ctx.db, &run.task_id, &g, change)
                    .await
                    .map_err(transient)?
            }
            Fate::DeadLetter { error, reason } => {
                let error = &match reason {
                    DeadReason::CrashLoop => {
                        "crash_loop: this task kept stopping its worker and was set aside"
                            .to_owned()
                    }
                    DeadReason::Exhausted => {
                        format!("retries_exhausted: {}", public_error(&run.task_id, error))
                    }
                    _ => public_error(&run.task_id, error),
                };
                // Only while the task is still at this message's step: a stale repeat of
                // a step that already committed (no fence row stops it any more, the
                // task's state does) must not fail a task that has moved on.
                let g = Guard::status(&Status::ACTIVE).at_step(run.step);
                store::finish_unsuccessfully(
                    &ctx.db,
                    &run.task_id,
                    &g,
                    Status::Failed,
                    Some(error.clone()),
                )
                .await
                .map_err(transient)?
            }
        };
        if let Some((_, ev)) = event {
            publish_events(ctx.broker.as_ref(), &[ev]).await;
        }
        Ok(())
    }
}

/// Failure classes a tenant may read, as the handler words them; anything else (a
/// database error, a panic's text, a broker error) is internal: logged with the task id,
/// shown as `internal_error`.
const PUBLIC_CODES: [&str; 3] = [
    "provider_unavailable:",
    "provider_rejected:",
    "deadline_exceeded:",
];

/// What a tenant reads of a failure (`tasks.error`, event messages): a stable code and a
/// short message, never internal detail.
fn public_error(task_id: &str, raw: &str) -> String {
    if PUBLIC_CODES.iter().any(|c| raw.starts_with(c)) {
        return raw.to_owned();
    }
    tracing::warn!(
        task_id,
        error = raw,
        "task step failed (detail kept from the tenant)"
    );
    format!("internal_error: the platform could not run this step (task {task_id})")
}

#[cfg(test)]
mod tests {
    use super::public_error;

    #[test]
    fn only_known_classes_reach_the_tenant() {
        let shown = public_error(
            "t1",
            "provider_rejected: the provider refused this request (generate)",
        );
        assert!(shown.starts_with("provider_rejected:"));
        for internal in [
            "database: error returned from database: relation \"tasks\" does not exist",
            "panic: called `Option::unwrap()` on a `None` value",
            "provider answered 500: {\"secret\":\"x\"} at https://user:pw@llm.internal/v1",
        ] {
            let shown = public_error("t1", internal);
            assert_eq!(
                shown,
                "internal_error: the platform could not run this step (task t1)"
            );
        }
    }
}
