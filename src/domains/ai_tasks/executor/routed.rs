//! The providers as one executor: each step goes to the provider its kind (or the step)
//! names, and its output is stamped with that name.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::{
    ExecError, Executor, Job, Outcome, Parked, Progress, dify, ffmpeg, gate, openai, prediction,
    simulated, vectorize,
};
use crate::domains::ai_tasks::settings::{AiSettings, Protocol, ProviderSettings};
use crate::search::semantic::Embedded;
use crate::storage::Storage;

/// The configured providers, routed per kind and pipeline step (`[ai.kinds.<kind>]
/// provider` and `steps`).
pub fn from_settings(
    ai: &AiSettings,
    db: sea_orm::DatabaseConnection,
    storage: Arc<Storage>,
    gates: Arc<gate::Gates>,
    plans: Arc<crate::plans::Plans>,
) -> anyhow::Result<Arc<dyn Executor>> {
    let gate = |name: &str, p: &ProviderSettings| {
        gates
            .gate(name, p.requests_per_minute, p.tokens_per_minute)
            .with_fleet_cap(p.fleet_max_concurrent)
    };
    let mut providers: HashMap<&str, Named> = HashMap::new();
    for (name, p) in &ai.providers {
        // Every provider's 429 count is on /metrics from the first scrape (an alert rule's
        // rate over it has a series to read before the first storm).
        metrics::counter!("conveyor_provider_rate_limited_total", "provider" => name.clone())
            .increment(0);
        let exec: Arc<dyn Executor> = match p.protocol {
            Protocol::Simulated => Arc::new(simulated::Simulated::new(ai, storage.clone())),
            Protocol::Openai => Arc::new(openai::OpenAi::new(p, gate(name, p), storage.clone())?),
            Protocol::Dify => Arc::new(dify::Dify::new(p, gate(name, p))?),
            Protocol::Ffmpeg => Arc::new(ffmpeg::Ffmpeg::new(
                p,
                db.clone(),
                storage.clone(),
                plans.clone(),
            )),
            Protocol::Replicate | Protocol::Prediction => Arc::new(prediction::Prediction::new(
                p,
                gate(name, p),
                storage.clone(),
            )?),
        };
        providers.insert(name, (name.clone(), exec));
    }
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
    let by_name = providers
        .into_iter()
        .map(|(name, (_, exec))| (name.to_owned(), exec))
        .collect();
    Ok(Arc::new(Routed {
        by_kind,
        by_step,
        by_name,
    }))
}

/// A provider with the name it is configured under.
type Named = (String, Arc<dyn Executor>);

/// Each step to the provider its kind (or the step) names; the output is stamped with
/// that name (`provider`), which the usage records.
struct Routed {
    by_kind: HashMap<String, Named>,
    by_step: HashMap<(String, String), Named>,
    /// A parked job is checked (and canceled) at the provider it was started at, even
    /// if the kind has moved to another since.
    by_name: HashMap<String, Arc<dyn Executor>>,
}

impl Routed {
    fn route(&self, job: &Job<'_>) -> Result<&Named, ExecError> {
        let kind = job.kind.as_str();
        self.by_step
            .get(&(kind.to_owned(), job.step.to_owned()))
            .or_else(|| self.by_kind.get(kind))
            .ok_or_else(|| ExecError::Permanent(format!("no provider serves {kind}")))
    }

    /// The provider that embeds: the one that writes a video's knowledge entry.
    fn embedder(&self) -> Option<&Arc<dyn Executor>> {
        let kind = crate::domains::ai_tasks::kinds::TaskKind::VideoAnalysis.as_str();
        self.by_step
            .get(&(kind.to_owned(), vectorize::STEP.to_owned()))
            .or_else(|| self.by_kind.get(kind))
            .map(|(_, exec)| exec)
    }

    /// A finished output of the step that makes vectors gets them, from the provider
    /// that ran it.
    async fn vectorized(
        exec: &dyn Executor,
        job: &Job<'_>,
        outcome: Outcome,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ExecError> {
        match outcome {
            Outcome::Done(output) if vectorize::applies(job) => Ok(Outcome::Done(
                vectorize::attach(exec, job, output, cancel).await?,
            )),
            other => Ok(other),
        }
    }

    fn named(&self, provider: &str) -> Result<&Arc<dyn Executor>, ExecError> {
        self.by_name.get(provider).ok_or_else(|| {
            ExecError::Permanent(format!("no provider {provider:?} in [ai.providers]"))
        })
    }
}

/// The span of one provider call: for the log, which provider, kind and step; with
/// traces on, a client span named by the call and provider (its step is its parent)
/// with what it answered (HTTP status, recorded by the HTTP provider), the model and
/// tokens it reports. Never the prompt or the key.
fn call_span(provider: &str, job: &Job<'_>, call: &'static str) -> tracing::Span {
    if !crate::traces::on() {
        return tracing::info_span!(
            "provider",
            provider = %provider,
            kind = job.kind.as_str(),
            step = %job.step,
            attempt = job.attempt,
            "http.response.status_code" = tracing::field::Empty,
            "gen_ai.request.model" = tracing::field::Empty,
            "gen_ai.usage.input_tokens" = tracing::field::Empty,
            "gen_ai.usage.output_tokens" = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
    }
    tracing::info_span!(
        "provider",
        otel.name = %format_args!("{call} {provider}"),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        "http.response.status_code" = tracing::field::Empty,
        "gen_ai.request.model" = tracing::field::Empty,
        "gen_ai.usage.input_tokens" = tracing::field::Empty,
        "gen_ai.usage.output_tokens" = tracing::field::Empty,
        outcome = tracing::field::Empty,
    )
}

/// Records a call's end on its span and in the per-provider latency histogram
/// (`conveyor_provider_call_seconds{provider,outcome}`).
fn called(
    span: &tracing::Span,
    provider: &str,
    began: std::time::Instant,
    result: Result<Option<&serde_json::Value>, &ExecError>,
) {
    let outcome = match &result {
        Ok(Some(_)) => "done",
        Ok(None) => "parked",
        Err(ExecError::Canceled) => "canceled",
        Err(ExecError::Transient(_)) => "transient",
        Err(ExecError::Permanent(_)) => "permanent",
    };
    span.record("outcome", outcome);
    metrics::histogram!("conveyor_provider_call_seconds", "provider" => provider.to_owned(), "outcome" => outcome)
        .record(began.elapsed().as_secs_f64());
    if let Ok(Some(output)) = result {
        let usage = crate::domains::ai_tasks::usage::Usage::of(output);
        if let Some(model) = &usage.model {
            span.record("gen_ai.request.model", model.as_str());
        }
        span.record("gen_ai.usage.input_tokens", usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", usage.output_tokens);
    }
    if result.is_err() && outcome != "canceled" {
        span.record("otel.status_code", "ERROR");
    }
}

/// Stamps the provider's name on a finished output (the usage records it) or a parked
/// job (its checks go back to it).
fn stamped(outcome: Outcome, name: &str) -> Outcome {
    match outcome {
        Outcome::Done(output) => Outcome::Done(stamp(output, name)),
        Outcome::Parked(p) => Outcome::Parked(Parked {
            provider: name.to_owned(),
            ..p
        }),
    }
}

fn stamp(mut output: serde_json::Value, name: &str) -> serde_json::Value {
    if let Some(o) = output.as_object_mut() {
        o.insert("provider".into(), name.into());
    }
    output
}

#[async_trait]
impl Executor for Routed {
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<serde_json::Value, ExecError> {
        let (name, exec) = self.route(job)?;
        let began = std::time::Instant::now();
        let span = call_span(name, job, "run");
        let output = async {
            let output = exec.run(job, progress, cancel).await?;
            if vectorize::applies(job) {
                vectorize::attach(exec.as_ref(), job, output, cancel).await
            } else {
                Ok(output)
            }
        }
        .instrument(span.clone())
        .await;
        called(&span, name, began, output.as_ref().map(Some));
        Ok(stamp(output?, name))
    }

    async fn start(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ExecError> {
        let (name, exec) = self.route(job)?;
        let began = std::time::Instant::now();
        let span = call_span(name, job, "start");
        let outcome = async {
            let outcome = exec.start(job, progress, cancel).await?;
            Self::vectorized(exec.as_ref(), job, outcome, cancel).await
        }
        .instrument(span.clone())
        .await;
        called(&span, name, began, outcome.as_ref().map(Outcome::output));
        Ok(stamped(outcome?, name))
    }

    async fn check(
        &self,
        provider: &str,
        job: &Job<'_>,
        handle: &str,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ExecError> {
        let exec = self.named(provider)?;
        let began = std::time::Instant::now();
        let span = call_span(provider, job, "check");
        let outcome = async {
            let outcome = exec.check(provider, job, handle, cancel).await?;
            Self::vectorized(exec.as_ref(), job, outcome, cancel).await
        }
        .instrument(span.clone())
        .await;
        called(
            &span,
            provider,
            began,
            outcome.as_ref().map(Outcome::output),
        );
        Ok(stamped(outcome?, provider))
    }

    async fn cancel_job(&self, provider: &str, handle: &str) -> Result<(), ExecError> {
        self.named(provider)?.cancel_job(provider, handle).await
    }

    async fn embed_texts(
        &self,
        inputs: &[String],
        cancel: &CancellationToken,
    ) -> Result<Option<Embedded>, ExecError> {
        match self.embedder() {
            Some(exec) => exec.embed_texts(inputs, cancel).await,
            None => Ok(None),
        }
    }
}
