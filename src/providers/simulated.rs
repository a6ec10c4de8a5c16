//! The simulated provider: each step takes its configured time (by the kind's name),
//! reports progress in five ticks, honours cancellation at every tick, and derives its output from the
//! prompt (same prompt, same output). `params.simulate` can inject failures when
//! `ai.allow_failure_injection` is on:
//! `{"fail_transient_attempts": 2}` fails the first two attempts transiently,
//! `{"fail_permanent": true}` fails for good, `{"step_ms": 3000}` overrides the duration.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use sha2::{Digest as _, Sha256};
use tokio_util::sync::CancellationToken;

use super::artifacts::{self, ArtifactError};
use super::settings::Simulation;
use super::{ExecError, Executor, Job, Progress, Report};
use crate::search::semantic;
use crate::storage::Storage;

const TICKS: u64 = 5;

pub struct Simulated {
    step_ms: HashMap<String, u64>,
    allow_failures: bool,
    /// Where its images, posters and models go.
    storage: Arc<Storage>,
}

impl Simulated {
    pub fn new(sim: &Simulation, storage: Arc<Storage>) -> Self {
        Simulated {
            storage,
            step_ms: sim.step_ms.clone(),
            allow_failures: sim.allow_failures,
        }
    }
}

fn digest(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    hex::encode(h.finalize())
}

#[async_trait]
impl Executor for Simulated {
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<serde_json::Value, ExecError> {
        let sim = job.params.get("simulate");
        let num = |k: &str| sim.and_then(|s| s.get(k)).and_then(|v| v.as_u64());
        let step_ms =
            num("step_ms").unwrap_or_else(|| self.step_ms.get(job.kind).copied().unwrap_or(1000));
        for tick in 1..=TICKS {
            tokio::select! {
                _ = cancel.cancelled() => return Err(ExecError::Canceled),
                _ = tokio::time::sleep(Duration::from_millis(step_ms / TICKS)) => {}
            }
            let _ = progress.send(Report::Progress(
                (tick * 100 / TICKS) as i32,
                Some(format!("{} {}/{}", job.step, tick, TICKS)),
            ));
        }
        if self.allow_failures {
            if sim
                .and_then(|s| s.get("fail_permanent"))
                .and_then(|v| v.as_bool())
                == Some(true)
            {
                return Err(ExecError::Permanent(
                    "simulated permanent failure: the provider refused the prompt".into(),
                ));
            }
            if num("fail_transient_attempts").is_some_and(|n| job.attempt as u64 <= n) {
                return Err(ExecError::Transient(format!(
                    "simulated provider timeout (attempt {})",
                    job.attempt
                )));
            }
        }
        let h = digest(&[job.kind, job.step, job.prompt]);
        let words: Vec<&str> = job.prompt.split_whitespace().take(12).collect();
        let at = (job.user_id, job.task_id, job.step);
        // A store that fails is a provider that failed to deliver: worth retrying.
        let stored = |e: ArtifactError| ExecError::Transient(format!("storing the output: {e}"));
        let mut output = match (job.kind, job.step) {
            ("copywriting", _) => {
                json!({ "text": format!("✨ {} — crafted for short video. #{}", words.join(" "), &h[..8]) })
            }
            ("image", _) => {
                let file = artifacts::store_png(&self.storage, at, h.as_bytes(), (512, 512))
                    .await
                    .map_err(stored)?;
                json!({ "width": 512, "height": 512, "files": [file] })
            }
            // The simulator draws a poster, not a film: real video comes from a provider
            // (or FFmpeg) through the same storage path.
            ("video", _) => {
                let poster = artifacts::store_png(&self.storage, at, h.as_bytes(), (270, 480))
                    .await
                    .map_err(stored)?;
                json!({ "duration_s": 15, "resolution": "1080x1920", "files": [poster] })
            }
            ("model3d", _) => {
                let model = artifacts::store_glb(&self.storage, at)
                    .await
                    .map_err(stored)?;
                json!({ "polygons": 12, "files": [model] })
            }
            (_, "extract_audio") => {
                json!({ "audio_url": format!("https://cdn.conveyor.local/audio/{}.wav", &h[..16]) })
            }
            // One piece per segment the extraction stored, in their order.
            (_, "transcribe") => transcript(job, &words.join(" ")),
            (_, "summarize") => {
                json!({ "summary": format!("Summary ({}): {}", &h[..6], words.iter().take(6).copied().collect::<Vec<_>>().join(" ")) })
            }
            _ => json!({
                "text": format!("Knowledge entry {}: {}", &h[..8], job.previous.get("summarize").and_then(|s| s.get("summary")).and_then(|s| s.as_str()).unwrap_or("")),
            }),
        };
        // The steps a language model would do report tokens.
        if let Some(text) = ["text", "transcript", "summary"]
            .iter()
            .find_map(|k| output.get(*k).and_then(|t| t.as_str()))
        {
            output["usage"] = simulated_usage(job.prompt, text);
        }
        Ok(output)
    }

    /// Words hashed into a vector ([`semantic::hashed`]): texts that share words are near.
    async fn embed_texts(
        &self,
        inputs: &[String],
        _cancel: &CancellationToken,
    ) -> Result<Option<semantic::Embedded>, ExecError> {
        Ok(Some(semantic::Embedded {
            model: SIMULATED_EMBEDDINGS.into(),
            vectors: inputs.iter().map(|t| semantic::hashed(t)).collect(),
        }))
    }
}

/// The simulated embedder's model name.
pub const SIMULATED_EMBEDDINGS: &str = "simulated-hashed-512";

/// Token counts as a model would report them (about four bytes a token), so per-token
/// pricing works the same on the simulator.
fn simulated_usage(prompt: &str, text: &str) -> serde_json::Value {
    let tokens = |s: &str| s.len().div_ceil(4) as u64;
    let (input, output) = (tokens(prompt) + 16, tokens(text));
    json!({ "prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output })
}

/// The simulator's transcript: a piece per stored audio segment (one for the whole when
/// the extraction was simulated too), with each segment's start.
fn transcript(job: &Job<'_>, words: &str) -> serde_json::Value {
    let segments = job
        .previous
        .pointer("/extract_audio/audio")
        .and_then(|a| a.as_array())
        .cloned()
        .unwrap_or_default();
    let n = segments.len().max(1);
    let parts: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let start = segments
                .get(i)
                .and_then(|s| s["start_s"].as_f64())
                .unwrap_or(0.0);
            json!({ "start_s": start, "text": format!("[{}/{n}] Transcript of: {words}", i + 1) })
        })
        .collect();
    let text: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
    json!({ "transcript": text.join(" "), "segments": parts })
}
