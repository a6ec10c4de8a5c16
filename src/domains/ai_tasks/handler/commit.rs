//! A wave of results committed in one transaction (each alone if that fails), then
//! their events published.

use super::*;

use std::collections::HashMap;

use sea_orm::TransactionTrait;

use crate::consumer::Context;
use crate::consumer::answers::Answer;
use crate::providers::vectorize;

use crate::domains::ai_tasks::store::{self, Committed, StepResult};
use crate::domains::ai_tasks::usage::{Usage, pricing::Price};

impl AiTaskHandler {
    /// Commits the results of `wave` in one transaction, then publishes their events. If
    /// the transaction fails, each result is committed alone, so one bad row does not
    /// fail its neighbours.
    pub(super) async fn commit(&self, ctx: &Context, wave: Vec<Ran>) -> Vec<Answer> {
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
        let traces: HashMap<&str, &str> = wave
            .iter()
            .filter_map(|r| Some((r.task.id.as_str(), r.trace.as_deref()?)))
            .collect();
        self.after_commit(ctx, &committed, &traces).await;
        answers
    }

    /// One transaction for `wave`: each step's result (the task's next step through the
    /// outbox, or its success with credits and material). The committed tasks, their
    /// events, and whether each was the last step.
    pub(super) async fn commit_together(
        &self,
        ctx: &Context,
        wave: &[Ran],
    ) -> Result<Vec<(Committed, bool)>, store::StoreError> {
        let txn = ctx.db.begin().await?;
        let results: Vec<StepResult<'_>> = wave
            .iter()
            .map(|ran| {
                let last = ran.run.step as usize + 1 >= ran.task.kind.steps().len();
                let kind = self.ai.kinds.get(ran.task.kind.as_str());
                let next = ran.task.kind.steps().get(ran.run.step as usize + 1);
                StepResult {
                    approval: kind.zip(next).and_then(|(k, step)| k.approval_for(step)),
                    task: &ran.task,
                    step: ran.step,
                    trace: ran.trace.as_deref(),
                    result: if last {
                        final_result(ran)
                    } else {
                        let mut all = ran.previous.as_object().cloned().unwrap_or_default();
                        all.insert(ran.step.to_owned(), ran.output.clone());
                        serde_json::Value::Object(all)
                    },
                    last,
                    vectors: last.then(|| vectorize::of(&ran.output)).flatten(),
                    usage: Usage::of(&ran.output),
                    price: self
                        .ai
                        .kinds
                        .get(ran.task.kind.as_str())
                        .map(|k| k.price())
                        .unwrap_or(Price {
                            flat: ran.task.cost,
                            tokens: None,
                        }),
                }
            })
            .collect();
        let applied = store::commit_steps(&txn, &self.events, &results, self.max_payload).await?;
        let mut committed = Vec::with_capacity(wave.len());
        // `None`: fenced out (canceled meanwhile, or re-driven to a newer attempt): the
        // result is discarded, the message done all the same.
        for (r, a) in results.iter().zip(applied) {
            if let Some(c) = a {
                committed.push((c, r.last));
            }
        }
        txn.commit().await?;
        Ok(committed)
    }

    /// Counts the ended tasks, wakes the relay and publishes the events, each in the
    /// trace of the step that made it (`traces`, by task id).
    pub(super) async fn after_commit(
        &self,
        ctx: &Context,
        committed: &[(Committed, bool)],
        traces: &HashMap<&str, &str>,
    ) {
        if committed.is_empty() {
            return;
        }
        for (c, last) in committed {
            if *last {
                crate::domains::ai_tasks::metrics::ended(&c.task, c.refunded);
            }
        }
        self.relay.notify();
        let events: Vec<crate::live::Event> = committed
            .iter()
            .map(|(c, _)| {
                c.event
                    .live()
                    .traced(traces.get(c.task.id.as_str()).map(|t| (*t).to_owned()))
            })
            .collect();
        crate::live::publish(ctx.broker.as_ref(), &events).await;
    }
}
