//! An OpenAI-compatible provider (OpenAI, DeepSeek, Qwen's compatible mode, vLLM, …):
//! streamed chat completions for text ([`chat`]), `/images/generations` for images
//! ([`images`]), and the clients the media pipeline uses: `/audio/transcriptions`
//! ([`audio`]) and `/embeddings` ([`embeddings`]). All of them go through one
//! [`ProviderHttp`]: the same fleet-wide limits, pauses and error classes.
//!
//! Errors by what a retry can change: 429, 5xx, timeouts, resets and cut streams are
//! transient; other 4xx (a content-policy refusal, a bad key) are permanent. The
//! provider's own words go to the log, never to the tenant.

pub mod audio;
mod chat;
pub mod embeddings;
mod images;
pub mod prompts;
mod segments;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::gate::Gate;
use super::http::ProviderHttp;
use super::settings::ProviderSettings;
use super::{ExecError, Executor, Job, Progress, Wants};
use crate::storage::Storage;

pub struct OpenAi {
    http: ProviderHttp,
    model: String,
    image_model: String,
    audio_model: String,
    embedding_model: String,
    storage: Arc<Storage>,
}

impl OpenAi {
    pub fn new(s: &ProviderSettings, gate: Gate, storage: Arc<Storage>) -> anyhow::Result<Self> {
        Ok(OpenAi {
            http: ProviderHttp::new(s, gate)?,
            model: s.model.clone(),
            image_model: s.image_model.clone(),
            audio_model: s.audio_model.clone(),
            embedding_model: s.embedding_model.clone(),
            storage,
        })
    }
}

#[async_trait]
impl Executor for OpenAi {
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Value, ExecError> {
        // Each transcription takes its own place in the limits.
        if job.wants == Wants::Transcript {
            return self.transcribe_segments(job, progress, cancel).await;
        }
        let _slot = self.http.slot(cancel).await?;
        match job.wants {
            Wants::Image => self.image(job, progress, cancel).await,
            _ => self.chat(job, progress, cancel).await,
        }
    }

    async fn embed_texts(
        &self,
        inputs: &[String],
        cancel: &CancellationToken,
    ) -> Result<Option<crate::search::semantic::Embedded>, ExecError> {
        let e = self.embed(inputs, cancel).await?;
        Ok(Some(crate::search::semantic::Embedded {
            model: e.model,
            vectors: e
                .vectors
                .into_iter()
                .map(crate::search::semantic::normalized)
                .collect(),
        }))
    }
}
