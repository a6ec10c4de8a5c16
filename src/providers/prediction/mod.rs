//! A provider that takes minutes or hours (video, 3D, renders): it answers a create with
//! a job id and works on its own; the step parks ([`Outcome::Parked`]) and is checked
//! later (`parked`), woken early by the provider's callback where it sends one.
//!
//! The API's shape is configuration ([`api::PredictionApi`], Replicate's predictions API
//! by default): `POST create_path` with the task's inputs (`inputs`, as Dify's: `prompt`
//! or `params.<key>`), the model and the callback URL; `GET get_path` for its status
//! (`succeeded`, `failed`, anything else running), progress and outputs; `POST
//! cancel_path` to stop it. A finished job's output URLs (a string, a list, or an object
//! of them) are downloaded into the storage module, streamed; the provider's URLs
//! expire and are never handed on. Errors are classed like every HTTP provider's.

pub mod api;
mod outputs;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::gate::Gate;
use super::http::{ProviderHttp, snippet};
use super::{ExecError, Executor, Job, Outcome, Parked, Progress, Report};
use crate::providers::settings::{Protocol, ProviderSettings};
use crate::storage::Storage;
use api::{PredictionApi, percent_of};

/// How often [`Executor::run`] (which holds its worker, unlike a parked step) polls.
const RUN_POLL: Duration = Duration::from_secs(2);

pub struct Prediction {
    http: ProviderHttp,
    api: PredictionApi,
    model: String,
    inputs: BTreeMap<String, String>,
    storage: Arc<Storage>,
}

impl Prediction {
    pub fn new(s: &ProviderSettings, gate: Gate, storage: Arc<Storage>) -> anyhow::Result<Self> {
        let api = match (&s.protocol, &s.prediction) {
            (Protocol::Replicate, None) => PredictionApi::replicate(&s.model),
            (_, Some(api)) => api.clone(),
            (_, None) => PredictionApi::default(),
        };
        Ok(Prediction {
            http: ProviderHttp::new(s, gate)?,
            api,
            model: s.model.clone(),
            inputs: s.inputs.clone(),
            storage,
        })
    }

    /// The job's inputs from the task: `prompt`, or a field of its params (any JSON; a
    /// missing one is left out, so the model's default applies).
    fn inputs_of(&self, job: &Job<'_>) -> Value {
        let mut inputs = serde_json::Map::new();
        for (name, source) in &self.inputs {
            let value = match source.strip_prefix("params.") {
                Some(key) => match job.params.get(key) {
                    Some(v) => v.clone(),
                    None => continue,
                },
                None => Value::String(job.prompt.to_owned()),
            };
            inputs.insert(name.clone(), value);
        }
        Value::Object(inputs)
    }

    fn path(&self, template: &str, id: &str) -> String {
        self.api.path(template, id, &self.model)
    }

    /// Reads an answer as JSON.
    async fn json(resp: reqwest::Response) -> Result<Value, ExecError> {
        resp.json().await.map_err(|e| {
            ExecError::Transient(format!("reading the job's answer: {}", e.without_url()))
        })
    }

    /// Where a job stands, from its JSON: finished (its outputs stored), failed, or
    /// still running (parked, with its progress).
    /// A create's answer may carry the id alone (many APIs answer `{"task_id"}`): the job
    /// is then taken as started (`created`).
    async fn outcome(
        &self,
        job: &Job<'_>,
        answer: &Value,
        created: bool,
    ) -> Result<Outcome, ExecError> {
        let text = |pointer: &str| {
            answer
                .pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let id = match answer.pointer(&self.api.id_pointer) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => {
                return Err(ExecError::Transient(format!(
                    "the job's answer has no id at {}: {}",
                    self.api.id_pointer,
                    snippet(&answer.to_string())
                )));
            }
        };
        let status = match text(&self.api.status_pointer) {
            Some(status) => status,
            None if created => String::new(),
            None => {
                return Err(ExecError::Transient(format!(
                    "the job's answer has no status at {}",
                    self.api.status_pointer
                )));
            }
        };
        if self.api.failed.contains(&status) {
            let error = answer
                .pointer(&self.api.error_pointer)
                .map(|e| snippet(&e.to_string()))
                .unwrap_or_default();
            return Err(ExecError::Permanent(format!(
                "the job {id} ended {status}: {error}"
            )));
        }
        if self.api.succeeded.contains(&status) {
            let output = answer
                .pointer(&self.api.output_pointer)
                .cloned()
                .unwrap_or(Value::Null);
            let files = outputs::store(&self.storage, job, &output).await?;
            let seconds = answer
                .pointer("/metrics/predict_time")
                .and_then(Value::as_f64);
            let mut out = json!({ "files": files, "job": id, "model": self.model });
            if let Some(s) = seconds {
                out["usage"] = json!({ "seconds": s });
            }
            return Ok(Outcome::Done(out));
        }
        let progress = if self.api.progress_pointer.is_empty() {
            None
        } else {
            percent_of(answer.pointer(&self.api.progress_pointer))
        };
        Ok(Outcome::Parked(Parked {
            provider: String::new(),
            handle: id,
            progress,
            message: (!status.is_empty()).then_some(status),
        }))
    }
}

#[async_trait]
impl Executor for Prediction {
    /// Starts the job and polls it here until it ends: for callers that hold a worker
    /// anyway. The consumer parks instead ([`Executor::start`]).
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Value, ExecError> {
        let mut outcome = self.start(job, progress, cancel).await?;
        loop {
            match outcome {
                Outcome::Done(v) => return Ok(v),
                Outcome::Parked(p) => {
                    if let Some(pct) = p.progress {
                        let _ = progress.send(Report::Progress(pct, p.message.clone()));
                    }
                    tokio::select! {
                        _ = cancel.cancelled() => {
                            let _ = self.cancel_job("", &p.handle).await;
                            return Err(ExecError::Canceled);
                        }
                        _ = tokio::time::sleep(RUN_POLL) => {}
                    }
                    outcome = self.check("", job, &p.handle, cancel).await?;
                }
            }
        }
    }

    async fn start(
        &self,
        job: &Job<'_>,
        _progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ExecError> {
        let body = self
            .api
            .create_body(&self.model, self.inputs_of(job), job.callback_url);
        let path = self.path(&self.api.create_path, "");
        let resp = self
            .http
            .send(|| self.http.post(&path, &body), 0, cancel)
            .await?;
        let answer = Self::json(resp).await?;
        self.outcome(job, &answer, true).await
    }

    async fn check(
        &self,
        _provider: &str,
        job: &Job<'_>,
        handle: &str,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ExecError> {
        let path = self.path(&self.api.get_path, handle);
        let resp = self.http.send(|| self.http.get(&path), 0, cancel).await?;
        let answer = Self::json(resp).await?;
        self.outcome(job, &answer, false).await
    }

    async fn cancel_job(&self, _provider: &str, handle: &str) -> Result<(), ExecError> {
        if self.api.cancel_path.is_empty() {
            return Ok(());
        }
        let path = self.path(&self.api.cancel_path, handle);
        let never = CancellationToken::new();
        self.http
            .send(|| self.http.post(&path, &json!({})), 0, &never)
            .await
            .map(drop)
    }
}
