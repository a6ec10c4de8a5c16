//! One provider under the name it is configured by: every call gets its span (which
//! provider, kind and step; with traces on, a client span with what the provider
//! answered), the per-provider latency histogram, the vectors a step asks for, and the
//! provider's name stamped on what it answered (a finished output's usage records it; a
//! parked job's checks go back to it).

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::{ExecError, Executor, Job, Outcome, Parked, Progress, vectorize};
use crate::search::semantic::Embedded;

/// A provider with the name it is configured under (`[ai.providers.<name>]`).
#[derive(Clone)]
pub struct Provider {
    name: Arc<str>,
    exec: Arc<dyn Executor>,
}

impl Provider {
    pub(super) fn new(name: &str, exec: Arc<dyn Executor>) -> Self {
        Provider {
            name: name.into(),
            exec,
        }
    }

    /// The name it is configured under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A finished output of a step that asks for vectors gets them, from this provider.
    async fn vectorized(
        &self,
        job: &Job<'_>,
        outcome: Outcome,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ExecError> {
        match outcome {
            Outcome::Done(output) if job.vectors => Ok(Outcome::Done(
                vectorize::attach(self.exec.as_ref(), &self.name, job, output, cancel).await?,
            )),
            other => Ok(other),
        }
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
            kind = job.kind,
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
        let usage = super::usage::Usage::of(output);
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
impl Executor for Provider {
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<serde_json::Value, ExecError> {
        let name = &*self.name;
        let began = std::time::Instant::now();
        let span = call_span(name, job, "run");
        let output = async {
            let output = self.exec.run(job, progress, cancel).await?;
            if job.vectors {
                vectorize::attach(self.exec.as_ref(), name, job, output, cancel).await
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
        let name = &*self.name;
        let began = std::time::Instant::now();
        let span = call_span(name, job, "start");
        let outcome = async {
            let outcome = self.exec.start(job, progress, cancel).await?;
            self.vectorized(job, outcome, cancel).await
        }
        .instrument(span.clone())
        .await;
        called(&span, name, began, outcome.as_ref().map(Outcome::output));
        Ok(stamped(outcome?, name))
    }

    /// Checks a parked job here (`provider` is this provider's name, as the job was
    /// stamped).
    async fn check(
        &self,
        _provider: &str,
        job: &Job<'_>,
        handle: &str,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ExecError> {
        let name = &*self.name;
        let began = std::time::Instant::now();
        let span = call_span(name, job, "check");
        let outcome = async {
            let outcome = self.exec.check(name, job, handle, cancel).await?;
            self.vectorized(job, outcome, cancel).await
        }
        .instrument(span.clone())
        .await;
        called(&span, name, began, outcome.as_ref().map(Outcome::output));
        Ok(stamped(outcome?, name))
    }

    async fn cancel_job(&self, _provider: &str, handle: &str) -> Result<(), ExecError> {
        self.exec.cancel_job(&self.name, handle).await
    }

    async fn embed_texts(
        &self,
        inputs: &[String],
        cancel: &CancellationToken,
    ) -> Result<Option<Embedded>, ExecError> {
        self.exec.embed_texts(inputs, cancel).await
    }
}
