//! The pipeline's speech-to-text stage: each audio segment the extraction stored is one
//! transcription request, several at once within the provider's limits (its gate and
//! `max_concurrent` hold for every request), reassembled in segment order with each
//! segment's start. A segment that fails fails the step, which the retry tiers run again.

use bytes::BytesMut;
use futures::{StreamExt as _, TryStreamExt as _};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::OpenAi;
use crate::providers::{ExecError, Job, Progress, Report};
use crate::storage::Key;

/// Segments transcribed at once by one step (the fleet's limits still apply to each).
const AT_ONCE: usize = 4;

impl OpenAi {
    pub(super) async fn transcribe_segments(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Value, ExecError> {
        let segments: Vec<(String, f64)> = job
            .previous
            .pointer("/extract_audio/audio")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| Some((s["key"].as_str()?.to_owned(), s["start_s"].as_f64()?)))
                    .collect()
            })
            .unwrap_or_default();
        if segments.is_empty() {
            return Err(ExecError::Permanent(
                "input_missing: the extraction stored no audio segments".into(),
            ));
        }
        let language = job.params.get("language").and_then(Value::as_str);
        let total = segments.len();
        let done = std::sync::atomic::AtomicUsize::new(0);
        let parts: Vec<(f64, String, Option<f64>, String)> = futures::stream::iter(segments)
            .map(|(key, start)| {
                let done = &done;
                async move {
                    let audio = self.segment(&key).await?;
                    let name = key.rsplit('/').next().unwrap_or("segment.wav").to_owned();
                    let t = self.transcribe(audio, &name, language, cancel).await?;
                    let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    let _ = progress.send(Report::Progress(
                        (n * 100 / total) as i32,
                        Some(format!("transcribed {n} of {total} segments")),
                    ));
                    Ok::<_, ExecError>((start, t.text, t.seconds, t.model))
                }
            })
            .buffered(AT_ONCE)
            .try_collect()
            .await?;
        let seconds: f64 = parts.iter().filter_map(|p| p.2).sum();
        let text = parts
            .iter()
            .map(|p| p.1.trim())
            .collect::<Vec<_>>()
            .join(" ");
        let model = parts.first().map(|p| p.3.clone()).unwrap_or_default();
        Ok(json!({
            "transcript": text,
            "segments": parts.iter().map(|(start, text, _, _)| json!({ "start_s": start, "text": text })).collect::<Vec<_>>(),
            "model": model,
            "usage": { "seconds": seconds },
        }))
    }

    /// A stored segment's bytes.
    async fn segment(&self, key: &str) -> Result<bytes::Bytes, ExecError> {
        let key =
            Key::parse(key).map_err(|e| ExecError::Permanent(format!("input_missing: {e}")))?;
        let read = self
            .storage
            .read(&key, None)
            .await
            .map_err(|e| ExecError::Transient(format!("reading {key}: {e}")))?;
        let mut all = BytesMut::new();
        let mut bytes = read.bytes;
        while let Some(chunk) = bytes.next().await {
            all.extend_from_slice(
                &chunk.map_err(|e| ExecError::Transient(format!("reading {key}: {e}")))?,
            );
        }
        Ok(all.freeze())
    }
}
