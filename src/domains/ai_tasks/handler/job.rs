//! A task's step as an executor [`Job`]: what a run and a check of a parked job both
//! hand the provider.

use serde_json::Value;

use crate::domains::ai_tasks::settings::AiSettings;
use crate::domains::ai_tasks::store::Task;
use crate::providers::Job;

/// The parts of a job parsed from its task (its params, the earlier steps' outputs).
pub struct JobInputs {
    pub previous: Value,
    pub params: Value,
    pub max_output_tokens: Option<u32>,
}

impl JobInputs {
    pub fn of(t: &Task, ai: &AiSettings) -> Self {
        JobInputs {
            previous: t
                .result
                .as_deref()
                .and_then(|r| serde_json::from_str(r).ok())
                .unwrap_or_default(),
            params: serde_json::from_str(&t.params).unwrap_or_default(),
            max_output_tokens: ai
                .kinds
                .get(t.kind.as_str())
                .and_then(|k| k.pricing)
                .map(|p| p.max_output_tokens),
        }
    }

    /// Step `step` (at `step_index`) of `t`.
    pub fn job<'a>(
        &'a self,
        t: &'a Task,
        step_index: i32,
        step: &'a str,
        callback_url: Option<&'a str>,
    ) -> Job<'a> {
        Job {
            task_id: &t.id,
            user_id: &t.user_id,
            kind: t.kind.as_str(),
            step,
            wants: t.kind.wants(step),
            vectors: t.kind.vectorized(step),
            step_index: usize::try_from(step_index).unwrap_or(0),
            prompt: &t.prompt,
            params: &self.params,
            attempt: t.attempt,
            previous: &self.previous,
            max_output_tokens: self.max_output_tokens,
            callback_url,
        }
    }
}
