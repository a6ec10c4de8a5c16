//! FFmpeg as a provider: the video-analysis pipeline's extraction stage, run for real.
//! The task's upload (`params.upload_id`, a READY video of the task's owner, checked again
//! here) is copied from storage into a scratch directory, probed (`ffprobe`: a video with
//! no audio track fails with `no_audio_track`), its audio written as 16 kHz mono WAV in
//! segments of `segment_secs` (so no speech-to-text request is larger than a provider
//! takes) and `keyframes` JPEG thumbnails taken evenly across it; every file is stored
//! through the storage module and listed on the step's output (and so on the material).
//!
//! At most `max_concurrent` FFmpeg jobs run at once in a process, whatever the queue
//! prefetches; a process is killed when its step is canceled, runs past its deadline or
//! the consumer shuts down; scratch directories go with the step, and those a crash left
//! are removed when the next process starts.

pub mod probe;
mod process;

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt as _;
use sea_orm::DatabaseConnection;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::{ExecError, Executor, Job, Progress, Report, artifacts};
use crate::domains::ai_tasks::settings::ProviderSettings;
use crate::storage::Storage;
use crate::storage::records::{self, Dimensions, GeneratedFile, READY};
use crate::storage::sniff::{Kind, sniff};

pub use process::{scratch_root, sweep_orphans};

pub struct Ffmpeg {
    db: DatabaseConnection,
    storage: Arc<Storage>,
    /// FFmpeg jobs at once in this process.
    slots: Arc<Semaphore>,
    segment_secs: u64,
    keyframes: u32,
    /// The FFmpeg binary (`program`).
    program: String,
}

impl Ffmpeg {
    pub fn new(s: &ProviderSettings, db: DatabaseConnection, storage: Arc<Storage>) -> Self {
        let removed = sweep_orphans(&scratch_root());
        if removed > 0 {
            tracing::info!(
                removed,
                "removed scratch directories a crashed process left"
            );
        }
        Ffmpeg {
            db,
            storage,
            slots: Arc::new(Semaphore::new(s.max_concurrent.max(1) as usize)),
            segment_secs: s.segment_secs.max(1),
            keyframes: s.keyframes,
            program: s.program.clone(),
        }
    }

    /// The task's upload: a READY video of its owner's.
    async fn input(&self, job: &Job<'_>) -> Result<records::Object, ExecError> {
        let id = job
            .params
            .get("upload_id")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ExecError::Permanent("input_missing: params.upload_id is required".into())
            })?;
        records::find(&self.db, job.user_id, id)
            .await
            .map_err(|e| ExecError::Transient(format!("reading the upload: {e}")))?
            .filter(|o| o.status == READY && o.purpose == "video" && o.store_key.is_some())
            .ok_or_else(|| {
                ExecError::Permanent(format!(
                    "input_unavailable: upload {id} is not a ready video of the task's owner"
                ))
            })
    }

    /// Copies the stored object to `path`, streamed.
    async fn fetch(&self, key: &str, path: &std::path::Path) -> Result<(), ExecError> {
        let key = crate::storage::Key::parse(key)
            .map_err(|e| ExecError::Permanent(format!("input_unavailable: {e}")))?;
        let mut read = self
            .storage
            .read(&key, None)
            .await
            .map_err(|e| ExecError::Transient(format!("reading the upload: {e}")))?;
        let mut file = tokio::fs::File::create(path)
            .await
            .map_err(|e| ExecError::Transient(format!("scratch file: {e}")))?;
        while let Some(chunk) = read.bytes.next().await {
            let chunk =
                chunk.map_err(|e| ExecError::Transient(format!("reading the upload: {e}")))?;
            file.write_all(&chunk)
                .await
                .map_err(|e| ExecError::Transient(format!("scratch file: {e}")))?;
        }
        file.flush()
            .await
            .map_err(|e| ExecError::Transient(format!("scratch file: {e}")))
    }

    /// Stores the scratch file `path` as the step's file `name`, streamed (a 10-minute
    /// segment is ~19 MB; it never sits in memory whole).
    async fn keep(
        &self,
        job: &Job<'_>,
        path: &std::path::Path,
        name: &str,
        dims: Dimensions,
    ) -> Result<GeneratedFile, ExecError> {
        let file = tokio::fs::File::open(path)
            .await
            .map_err(|e| ExecError::Transient(format!("reading {}: {e}", path.display())))?;
        let body = tokio_util::io::ReaderStream::with_capacity(file, 256 * 1024);
        let accept = |head: &[u8]| {
            sniff(head).ok_or_else(|| format!("{name}: FFmpeg wrote something unrecognisable"))
        };
        let key_for = |kind: Kind| artifacts::key_of(job.user_id, job.task_id, name, kind);
        let written = self
            .storage
            .write_stream(body, u64::MAX, accept, key_for)
            .await
            .map_err(|e| ExecError::Transient(format!("storing {name}: {e}")))?;
        Ok(GeneratedFile::new(&written, dims))
    }

    async fn extract(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Value, ExecError> {
        let upload = self.input(job).await?;
        let _slot = tokio::select! {
            _ = cancel.cancelled() => return Err(ExecError::Canceled),
            permit = self.slots.clone().acquire_owned() => permit.map_err(|_| ExecError::Canceled)?,
        };
        let dir = process::scratch(job.task_id)?;
        let input = dir.path().join("input");
        self.fetch(upload.store_key.as_deref().unwrap_or_default(), &input)
            .await?;
        let input = input.display().to_string();
        let p = probe::probe(&input, cancel).await?;
        if !p.has_audio {
            return Err(ExecError::Permanent(
                "no_audio_track: the video has no audio to transcribe".into(),
            ));
        }
        let _ = progress.send(Report::Progress(20, Some("extracting the audio".into())));
        let segment = self.segment_secs.to_string();
        let pattern = dir.path().join("audio-%03d.wav").display().to_string();
        process::run(
            &self.program,
            &[
                "-nostdin",
                "-v",
                "error",
                "-i",
                &input,
                "-vn",
                "-ac",
                "1",
                "-ar",
                "16000",
                "-c:a",
                "pcm_s16le",
                "-f",
                "segment",
                "-segment_time",
                &segment,
                "-reset_timestamps",
                "1",
                &pattern,
            ],
            cancel,
        )
        .await?;
        let mut frames = Vec::new();
        if p.has_video && self.keyframes > 0 && p.duration_s > 0.0 {
            let _ = progress.send(Report::Progress(60, Some("taking keyframes".into())));
            let fps = format!(
                "fps={:.6},scale=320:-2",
                f64::from(self.keyframes) / p.duration_s
            );
            let n = self.keyframes.to_string();
            let pattern = dir.path().join("frame-%02d.jpg").display().to_string();
            process::run(
                &self.program,
                &[
                    "-nostdin",
                    "-v",
                    "error",
                    "-i",
                    &input,
                    "-vf",
                    &fps,
                    "-frames:v",
                    &n,
                    "-q:v",
                    "4",
                    &pattern,
                ],
                cancel,
            )
            .await?;
            frames = sorted(dir.path(), "frame-");
        }
        let _ = progress.send(Report::Progress(
            80,
            Some("storing the audio and keyframes".into()),
        ));
        let mut audio = Vec::new();
        let mut files = Vec::new();
        let segments = sorted(dir.path(), "audio-");
        for (i, path) in segments.iter().enumerate() {
            let start = i as f64 * self.segment_secs as f64;
            let length = (p.duration_s - start).clamp(0.0, self.segment_secs as f64);
            let dims = Dimensions {
                duration_ms: Some((length * 1000.0) as i64),
                ..Default::default()
            };
            let file = self
                .keep(job, path, &format!("{}-audio-{i:03}", job.step), dims)
                .await?;
            audio.push(json!({ "key": file.key, "start_s": start, "duration_s": length }));
            files.push(file);
        }
        let mut keyframes = Vec::new();
        for (i, path) in frames.iter().enumerate() {
            let file = self
                .keep(
                    job,
                    path,
                    &format!("{}-frame-{i:02}", job.step),
                    Dimensions::default(),
                )
                .await?;
            keyframes.push(json!({ "key": file.key }));
            files.push(file);
        }
        if audio.is_empty() {
            return Err(ExecError::Permanent(
                "no_audio_track: FFmpeg found no audio to extract".into(),
            ));
        }
        Ok(json!({
            "duration_s": p.duration_s,
            "width": p.width,
            "height": p.height,
            "audio": audio,
            "keyframes": keyframes,
            "files": files,
            "usage": { "seconds": p.duration_s },
            "model": "ffmpeg",
        }))
    }
}

/// The files of `dir` named `prefix…`, in name order (FFmpeg numbers them).
fn sorted(dir: &std::path::Path, prefix: &str) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

#[async_trait]
impl Executor for Ffmpeg {
    async fn run(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Value, ExecError> {
        match job.step {
            "extract_audio" => self.extract(job, progress, cancel).await,
            other => Err(ExecError::Permanent(format!("ffmpeg does not do {other}"))),
        }
    }
}
