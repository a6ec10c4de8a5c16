//! The consumer side: claim the task's lease, run the step with a heartbeat, report
//! progress, and commit the result, fenced by the attempt number.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, TransactionTrait};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::entity::task;
use super::executor::{ExecError, Executor, Job};
use super::kinds::{Status, TaskKind};
use super::messages::{RunStep, publish_events};
use super::store::{self, Change, Guard};
use crate::broker::{DeadReason, Envelope};
use crate::consumer::{Context, Fate, Handler, HandlerError, fence};
use crate::domains::ai_tasks::settings::AiSettings;
use crate::outbox::Relay;

pub struct AiTaskHandler {
    pub ai: Arc<AiSettings>,
    pub executor: Arc<dyn Executor>,
    pub relay: Relay,
    pub max_payload: usize,
    /// For the fair-share rule at claim time (`limits.tasks_running`, per-user overrides).
    pub limits: crate::config::LimitSettings,
    pub overrides: Arc<crate::limits::overrides::Cache>,
}

/// Minimum spacing of stored progress events of one task.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

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
    fn heartbeat(
        &self,
        db: DatabaseConnection,
        id: String,
        attempt: i32,
        stop: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        let every = Duration::from_millis(self.ai.heartbeat_ms);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
                }
                let beat = task::Entity::update_many()
                    .col_expr(task::Column::HeartbeatAt, Expr::value(Utc::now()))
                    .filter(task::Column::Id.eq(id.as_str()))
                    .filter(task::Column::Attempt.eq(attempt))
                    .filter(task::Column::Status.eq(Status::Processing))
                    .exec(&db)
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
        })
    }
}

#[async_trait]
impl Handler for AiTaskHandler {
    async fn handle(&self, ctx: &Context, msg: &Envelope) -> Result<(), HandlerError> {
        let run: RunStep = serde_json::from_value(msg.payload.clone())
            .map_err(|e| HandlerError::permanent(format!("bad run-step payload: {e}")))?;
        let Some(t) = store::get(&ctx.db, &run.task_id).await.map_err(transient)? else {
            return Err(HandlerError::permanent(format!(
                "task {} does not exist",
                run.task_id
            )));
        };
        // The chaos harness's message that kills its consumer every time.
        #[cfg(feature = "failpoints")]
        if t.prompt.starts_with("chaos:crash") {
            crate::crash_point!("ai::crash_marked");
        }
        let (kind, status) = (t.kind, t.status);
        if status.is_terminal() || t.step_index != run.step {
            // Finished, canceled, or a duplicate of a step that already committed.
            return Ok(());
        }
        let steps = kind.steps();
        let step_name = steps.get(run.step as usize).copied().unwrap_or("generate");

        // Fair share: a tenant already running its share waits (not a failure), so its
        // backlog cannot take every worker from the others.
        if status != Status::Processing {
            let cap = self
                .overrides
                .get(&ctx.db, &t.user_id)
                .await
                .apply(self.limits)
                .tasks_running;
            if cap > 0 {
                let running = store::running_of(&ctx.db, &t.user_id, &t.id)
                    .await
                    .map_err(transient)?;
                if running >= u64::from(cap) {
                    return Err(HandlerError::Deferred(format!(
                        "tenant already runs {running} tasks (limits.tasks_running {cap})"
                    )));
                }
            }
        }

        // Claim the lease: only if nobody holds a fresh one.
        let stale = Utc::now() - chrono::Duration::milliseconds(self.ai.stale_after_ms as i64);
        let guard = Guard {
            statuses: &[Status::Pending, Status::Retrying, Status::Processing],
            attempt: None,
            step_index: Some(run.step),
            lease_free_before: Some(stale),
        };
        let claim = Change {
            status: Some(Status::Processing),
            claim: true,
            step: Some(step_name.to_owned()),
            message: Some(format!("{step_name} started")),
            ..Default::default()
        };
        let Some((t, ev)) = store::apply_now(&ctx.db, &t.id, &guard, claim)
            .await
            .map_err(transient)?
        else {
            // Another consumer holds a live lease; if it dies the reaper re-drives.
            return Ok(());
        };
        publish_events(ctx.broker.as_ref(), &[ev]).await;
        let attempt = t.attempt;

        let stop = CancellationToken::new();
        // If this future is dropped (consumer killed, shutdown), the heartbeat stops too
        // and the lease goes stale for the reaper.
        let _stop_on_drop = stop.clone().drop_guard();
        let beat = self.heartbeat(ctx.db.clone(), t.id.clone(), attempt, stop.clone());
        let (tx, mut rx) = mpsc::unbounded_channel::<(i32, Option<String>)>();
        let reporter = {
            let (db, broker, id, n) = (
                ctx.db.clone(),
                ctx.broker.clone(),
                t.id.clone(),
                steps.len() as i32,
            );
            let step_index = run.step;
            let step = step_name.to_owned();
            let ended = stop.clone();
            tokio::spawn(async move {
                // Progress is written at most every PROGRESS_EVERY; ticks in between are
                // coalesced (latest wins): a progress bar needs no more, the database less.
                // Once the step ended (or the task is no longer ours) nothing more is
                // written: the step's own end records its state, and the handler does not
                // wait out a throttle for a write nobody needs.
                let mut last_write: Option<std::time::Instant> = None;
                while let Some((mut pct, mut message)) = rx.recv().await {
                    if let Some(at) = last_write {
                        let wait = PROGRESS_EVERY.saturating_sub(at.elapsed());
                        if !wait.is_zero() {
                            tokio::select! {
                                _ = tokio::time::sleep(wait) => {}
                                _ = ended.cancelled() => return,
                            }
                        }
                    }
                    while let Ok((p, m)) = rx.try_recv() {
                        (pct, message) = (p, m);
                    }
                    if ended.is_cancelled() {
                        return;
                    }
                    last_write = Some(std::time::Instant::now());
                    let mut g = Guard::holder(attempt);
                    g.step_index = Some(step_index);
                    let change = Change {
                        progress: Some(((step_index * 100 + pct) / n).min(99)),
                        step: Some(step.clone()),
                        message,
                        ..Default::default()
                    };
                    if let Ok(Some((_, ev))) = store::apply_now(&db, &id, &g, change).await {
                        publish_events(broker.as_ref(), &[ev]).await;
                    }
                }
            })
        };
        let previous: serde_json::Value = t
            .result
            .as_deref()
            .and_then(|r| serde_json::from_str(r).ok())
            .unwrap_or_default();
        let params: serde_json::Value = serde_json::from_str(&t.params).unwrap_or_default();
        let job = Job {
            task_id: &t.id,
            kind,
            step: step_name,
            step_index: run.step as usize,
            prompt: &t.prompt,
            params: &params,
            attempt,
            previous: &previous,
        };
        let outcome =
            tokio::time::timeout(self.deadline(kind), self.executor.run(&job, &tx, &stop)).await;
        stop.cancel();
        drop(tx);
        let _ = beat.await;
        let _ = reporter.await;

        // The provider's own words (its URL, a slice of its answer) go to the log with
        // the task id; the tenant reads a stable code (see `public_error`).
        let output = match outcome {
            Err(_) => {
                return Err(HandlerError::transient(format!(
                    "deadline_exceeded: {step_name} took longer than its {} s deadline",
                    self.deadline(kind).as_secs()
                )));
            }
            Ok(Err(ExecError::Canceled)) => return Ok(()),
            Ok(Err(ExecError::Transient(e))) => {
                tracing::warn!(task_id = %t.id, attempt, step = step_name, error = %e, "provider failed");
                return Err(HandlerError::Transient(format!(
                    "provider_unavailable: the provider failed or timed out ({step_name}, attempt {attempt})"
                )));
            }
            Ok(Err(ExecError::Permanent(e))) => {
                tracing::warn!(task_id = %t.id, attempt, step = step_name, error = %e, "provider refused");
                return Err(HandlerError::Permanent(format!(
                    "provider_rejected: the provider refused this request ({step_name})"
                )));
            }
            Ok(Ok(v)) => v,
        };

        // The provider was paid for, nothing is committed yet.
        crate::crash_point!("ai::before_commit");
        let txn = ctx.db.begin().await.map_err(transient)?;
        let last = run.step as usize + 1 >= steps.len();
        let committed = if last {
            let result = if steps.len() > 1 {
                let mut all = previous.as_object().cloned().unwrap_or_default();
                all.insert(step_name.to_owned(), output.clone());
                all.insert(
                    "text".into(),
                    output.get("text").cloned().unwrap_or_default(),
                );
                serde_json::Value::Object(all)
            } else {
                output
            };
            store::finish_successfully(&txn, &t, attempt, &result)
                .await
                .map_err(transient)?
        } else {
            let mut all = previous.as_object().cloned().unwrap_or_default();
            all.insert(step_name.to_owned(), output);
            let mut g = Guard::holder(attempt);
            g.step_index = Some(run.step);
            let change = Change {
                step_index: Some(run.step + 1),
                progress: Some(((run.step + 1) * 100) / steps.len() as i32),
                release_lease: true,
                result: Some(serde_json::Value::Object(all).to_string()),
                message: Some(format!("{step_name} done")),
                ..Default::default()
            };
            let applied = store::apply(&txn, &t.id, &g, change)
                .await
                .map_err(transient)?;
            if let Some((next, _)) = &applied {
                // The next step is published only once this one committed (outbox).
                store::enqueue_step(&txn, next, run.step + 1, self.max_payload)
                    .await
                    .map_err(transient)?;
            }
            applied
        };
        let Some((now, ev)) = committed else {
            // Fenced: canceled meanwhile, or re-driven to a newer attempt. Discard.
            return Ok(());
        };
        fence::mark_in(&txn, &msg.id, ctx.queue.key)
            .await
            .map_err(transient)?;
        txn.commit().await.map_err(transient)?;
        if last {
            super::metrics::finished(&now);
        }
        self.relay.notify();
        publish_events(ctx.broker.as_ref(), &[ev]).await;
        Ok(())
    }

    async fn on_failure(
        &self,
        ctx: &Context,
        msg: &Envelope,
        fate: &Fate,
    ) -> Result<(), HandlerError> {
        let Ok(run) = serde_json::from_value::<RunStep>(msg.payload.clone()) else {
            return Ok(());
        };
        let event = match fate {
            Fate::Retry {
                error,
                next_attempt,
            } => {
                let error = &public_error(&run.task_id, error);
                let mut g = Guard::status(&[Status::Processing]);
                g.step_index = Some(run.step);
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
                let g = Guard::status(&[Status::Pending, Status::Processing, Status::Retrying]);
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
