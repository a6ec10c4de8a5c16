//! Which provider does a step: the one its kind names (`[ai.kinds.<kind>] provider`),
//! or the one named for that step (`steps`). The providers themselves are the
//! platform's ([`crate::providers::Providers`], by name); this is the flow's routing, as
//! one executor the handler runs every step through.

use std::collections::HashMap;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::settings::AiSettings;
use crate::providers::{ExecError, Executor, Job, Outcome, Progress, Provider, Providers};

/// Each step to the provider its kind (or the step) names; a parked job is checked (and
/// canceled) at the provider it was started at, even if the kind has moved since.
pub struct Router {
    by_kind: HashMap<String, Provider>,
    by_step: HashMap<(String, String), Provider>,
    providers: Providers,
}

impl Router {
    /// The routes of `ai`'s kinds; a kind or step that names a provider not configured
    /// stops the start-up.
    pub fn new(ai: &AiSettings, providers: Providers) -> anyhow::Result<Router> {
        let pick = |name: &str| {
            providers
                .get(name)
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("no provider {name:?} in [ai.providers]"))
        };
        let mut by_kind = HashMap::new();
        let mut by_step = HashMap::new();
        for (kind, k) in &ai.kinds {
            by_kind.insert(kind.clone(), pick(&k.provider)?);
            for (step, provider) in &k.steps {
                by_step.insert((kind.clone(), step.clone()), pick(provider)?);
            }
        }
        Ok(Router {
            by_kind,
            by_step,
            providers,
        })
    }

    fn route(&self, job: &Job<'_>) -> Result<&Provider, ExecError> {
        self.by_step
            .get(&(job.kind.to_owned(), job.step.to_owned()))
            .or_else(|| self.by_kind.get(job.kind))
            .ok_or_else(|| ExecError::Permanent(format!("no provider serves {}", job.kind)))
    }
}

#[async_trait]
impl Executor for Router {
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<serde_json::Value, ExecError> {
        self.route(job)?.run(job, progress, cancel).await
    }

    async fn start(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ExecError> {
        self.route(job)?.start(job, progress, cancel).await
    }

    async fn check(
        &self,
        provider: &str,
        job: &Job<'_>,
        handle: &str,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ExecError> {
        let at = self.providers.named(provider)?;
        at.check(provider, job, handle, cancel).await
    }

    async fn cancel_job(&self, provider: &str, handle: &str) -> Result<(), ExecError> {
        self.providers
            .named(provider)?
            .cancel_job(provider, handle)
            .await
    }
}
