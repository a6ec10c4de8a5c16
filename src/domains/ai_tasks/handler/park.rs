//! A step whose provider answered "working on it": parked, its worker and delivery
//! given back.

use super::*;

use chrono::{DateTime, Utc};

use crate::consumer::{Context, HandlerError};
use crate::domains::ai_tasks::messages::publish_events;
use crate::domains::ai_tasks::parked::store::{self as waits, Park};
use crate::domains::ai_tasks::queues::check_delay;
use crate::domains::ai_tasks::store::Task;
use crate::providers::Parked;

impl AiTaskHandler {
    /// Commits the park of `t`'s step (the task WAITING, its wait, its first check) and
    /// answers its message done. A claim that no longer holds the task parks nothing:
    /// the job it started is asked to stop.
    pub(super) async fn park(
        &self,
        ctx: &Context,
        t: &Task,
        p: &Parked,
        token: &str,
        deadline_at: DateTime<Utc>,
    ) -> Result<(), HandlerError> {
        let expected = self
            .ai
            .providers
            .get(&p.provider)
            .map_or(0, |s| s.expected_secs);
        let park = Park {
            task: t,
            parked: p,
            token,
            expected_at: Utc::now() + chrono::Duration::seconds(expected as i64),
            deadline_at,
            first_delay: ctx.broker.topology().delay(check_delay(0)).delay,
        };
        match waits::park(&ctx.db, &self.events, &park, self.max_payload).await {
            Ok(Some((_, ev))) => {
                metrics::counter!("conveyor_ai_parked_total", "provider" => p.provider.clone())
                    .increment(1);
                self.relay.notify();
                publish_events(ctx.broker.as_ref(), &[ev]).await;
                Ok(())
            }
            Ok(None) => {
                tracing::info!(task_id = %t.id, job = %p.handle, "task moved on while its job was created; canceling the job");
                if let Err(e) = self.executor.cancel_job(&p.provider, &p.handle).await {
                    tracing::warn!(task_id = %t.id, error = %e, "canceling an orphan job failed");
                }
                Ok(())
            }
            // Not parked: the step runs again with a job of its own.
            Err(e) => {
                tracing::warn!(task_id = %t.id, job = %p.handle, error = %e, "parking failed; canceling the job, the step will run again");
                if let Err(e) = self.executor.cancel_job(&p.provider, &p.handle).await {
                    tracing::warn!(task_id = %t.id, error = %e, "canceling the unparked job failed");
                }
                Err(transient(e))
            }
        }
    }
}
