//! FFmpeg as a provider: the video-analysis pipeline's extraction stage, run for real.
//! The task's upload (`params.upload_id`, a READY video of the task's owner, checked again
//! here) is copied from storage into a scratch directory, probed (`ffprobe`: a video with
//! no audio track fails with `no_audio_track`), its audio written as 16 kHz mono WAV in
//! segments of `segment_secs` (so no speech-to-text request is larger than a provider
//! takes) and `keyframes` JPEG thumbnails taken evenly across it; every file is stored
//! through the storage module and listed on the step's output (and so on the material).
//!
//! An upload is untrusted input to FFmpeg: it is read through the file protocol and the
//! video demuxers only ([`args`]), and what it may write is bounded before FFmpeg runs
//! ([`bounds`]: its declared length, `max_output_mib`, the room left in its owner's
//! storage quota); the files are reserved against the quota before they are stored
//! ([`keep`]). A refusal fails the task (permanent: its credits back).
//!
//! At most `max_concurrent` FFmpeg jobs run at once in a process, whatever the queue
//! prefetches; a process is killed when its step is canceled, runs past its deadline or
//! the consumer shuts down; scratch directories go with the step, and those a crash left
//! are removed when the next process starts.

pub mod args;
pub mod bounds;
mod keep;
pub mod length;
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

use super::{ExecError, Executor, Job, Progress, Report};
use crate::plans::Plans;
use crate::providers::settings::ProviderSettings;
use crate::storage::Storage;
use crate::storage::records::{self, Dimensions, ObjectStatus, usage};
use bounds::{Budget, Plan};
use keep::Output;
use process::{RunError, Watch};

#[cfg(test)]
/// Whether FFmpeg runs here; a skip line if not (a failure when
/// CONVEYOR_REQUIRE_SERVICES=1, where scripts/services.sh installed it).
pub(crate) fn ffmpeg_here(test: &str) -> bool {
    let here = std::process::Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !here {
        assert!(
            std::env::var("CONVEYOR_REQUIRE_SERVICES").as_deref() != Ok("1"),
            "{test}: FFmpeg is not installed and CONVEYOR_REQUIRE_SERVICES=1"
        );
        eprintln!("SKIPPED {test}: FFmpeg is not installed");
    }
    here
}

pub use process::{scratch_root, sweep_orphans};

/// Bytes a watched run may write past its budget before it is killed: the segments' WAV
/// headers (78 bytes each) and a run that stops a little after its `-t`. What is stored
/// is reserved against the quota to the byte regardless.
const HEADROOM: u64 = 256 * 1024;

pub struct Ffmpeg {
    db: DatabaseConnection,
    storage: Arc<Storage>,
    /// The plans: whose storage quota the owner has.
    plans: Arc<Plans>,
    /// FFmpeg jobs at once in this process.
    slots: Arc<Semaphore>,
    segment_secs: u64,
    keyframes: u32,
    /// The FFmpeg binary (`program`).
    program: String,
    /// The most one extraction writes, bytes (`max_output_mib`).
    max_output: u64,
}

impl Ffmpeg {
    pub fn new(
        s: &ProviderSettings,
        db: DatabaseConnection,
        storage: Arc<Storage>,
        plans: Arc<Plans>,
    ) -> Self {
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
            plans,
            slots: Arc::new(Semaphore::new(s.max_concurrent.max(1) as usize)),
            segment_secs: s.segment_secs.max(1),
            keyframes: s.keyframes,
            program: s.program.clone(),
            max_output: s.max_output_mib.max(1).saturating_mul(1024 * 1024),
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
            .filter(|o| {
                o.status == ObjectStatus::Ready && o.purpose == "video" && o.store_key.is_some()
            })
            .ok_or_else(|| {
                ExecError::Permanent(format!(
                    "input_unavailable: upload {id} is not a ready video of the task's owner"
                ))
            })
    }

    /// The owner's storage quota (their plan's, else `storage.quota_bytes`), as uploads
    /// are held to it.
    async fn quota(&self, user: &str) -> Result<u64, ExecError> {
        let standing = crate::plans::standing::resolve(&self.db, &self.plans, user)
            .await
            .map_err(|e| ExecError::Transient(format!("reading the owner's plan: {e}")))?;
        Ok(self
            .plans
            .get(&standing.plan)
            .storage_quota(self.storage.settings.quota_bytes))
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

    /// Runs FFmpeg with `args`, killed once the files of `out` pass the budget.
    async fn run_bounded(
        &self,
        args: &[String],
        out: &std::path::Path,
        budget: &Budget,
        cancel: &CancellationToken,
    ) -> Result<(), ExecError> {
        let watch = Watch {
            dir: out,
            limit: budget.bytes.saturating_add(HEADROOM),
        };
        match process::run_within(&self.program, args, cancel, Some(watch)).await {
            Ok(_) => Ok(()),
            Err(RunError::Exec(e)) => Err(e),
            Err(RunError::Overflow(written)) => Err(budget.refuse(written).into()),
        }
    }

    async fn extract(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Value, ExecError> {
        let upload = self.input(job).await?;
        let quota = self.quota(job.user_id).await?;
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
        // Outputs in a folder of their own: what is measured against the budget.
        let out = dir.path().join("out");
        tokio::fs::create_dir(&out)
            .await
            .map_err(|e| ExecError::Transient(format!("scratch directory: {e}")))?;
        let used = usage::used(&self.db, job.user_id)
            .await
            .map_err(|e| ExecError::Transient(format!("reading storage used: {e}")))?;
        let plan = Plan::of(p.duration_s, Budget::new(self.max_output, quota, used))?;
        let _ = progress.send(Report::Progress(20, Some("extracting the audio".into())));
        let pattern = out.join("audio-%03d.wav").display().to_string();
        let audio_args = args::audio(&input, &pattern, self.segment_secs, plan.max_secs);
        self.run_bounded(&audio_args, &out, &plan.budget, cancel)
            .await?;
        plan.check_audio(process::bytes_in(&out).await)?;
        let segments = sorted(&out, "audio-");
        let mut frames = Vec::new();
        if p.has_video && self.keyframes > 0 && p.duration_s > 0.0 {
            let _ = progress.send(Report::Progress(60, Some("taking keyframes".into())));
            let pattern = out.join("frame-%02d.jpg").display().to_string();
            let frame_args = args::keyframes(
                &input,
                &pattern,
                self.keyframes,
                p.duration_s,
                plan.max_secs,
            );
            self.run_bounded(&frame_args, &out, &plan.budget, cancel)
                .await?;
            frames = sorted(&out, "frame-");
        }
        if segments.is_empty() {
            return Err(ExecError::Permanent(
                "no_audio_track: FFmpeg found no audio to extract".into(),
            ));
        }
        let _ = progress.send(Report::Progress(
            80,
            Some("storing the audio and keyframes".into()),
        ));
        let mut outputs = Vec::new();
        let mut audio = Vec::new();
        for (i, path) in segments.iter().enumerate() {
            let start = i as f64 * self.segment_secs as f64;
            let length = (p.duration_s - start).clamp(0.0, self.segment_secs as f64);
            audio.push((start, length));
            outputs.push(Output {
                path: path.clone(),
                name: format!("{}-audio-{i:03}", job.step),
                dims: Dimensions {
                    duration_ms: Some((length * 1000.0) as i64),
                    ..Default::default()
                },
            });
        }
        for (i, path) in frames.iter().enumerate() {
            outputs.push(Output {
                path: path.clone(),
                name: format!("{}-frame-{i:02}", job.step),
                dims: Dimensions::default(),
            });
        }
        let files = keep::keep_all(&self.db, &self.storage, job, &outputs, quota).await?;
        // One file per output, in order: the segments, then the keyframes.
        let (audio_files, frame_files) = files.split_at(audio.len().min(files.len()));
        let audio: Vec<Value> = audio_files
            .iter()
            .zip(audio)
            .map(|(f, (start, length))| json!({ "key": f.key, "start_s": start, "duration_s": length }))
            .collect();
        let keyframes: Vec<Value> = frame_files
            .iter()
            .map(|f| json!({ "key": f.key }))
            .collect();
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
