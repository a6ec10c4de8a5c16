//! Video analysis end to end (issue 36): 50 short videos (10 s, 320x240, a tone for
//! sound) uploaded and analysed through two consumer processes (RabbitMQ, Redis,
//! PostgreSQL; the provider stages on the simulator at zero length, so FFmpeg and the
//! pipeline are what is measured). Prints the wall time beside the floor, FFmpeg's own
//! time for the same work run directly (ffprobe, the audio, the keyframes, one file after
//! another), and how long each stage's queue held a video before its step started.
//!
//!     cargo bench --bench analysis          # needs scripts/services.sh up (and ffmpeg)
//!     cargo bench --bench analysis -- 20    # videos

// Bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

#[path = "common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use conveyor::domains::ai_tasks::entity::{event, task};
use conveyor::domains::ai_tasks::kinds::Status;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};

const SECS: u32 = 10;

/// The test video, made once.
fn make_video(dir: &std::path::Path) -> std::path::PathBuf {
    let out = dir.join("clip.mp4");
    let status = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-f", "lavfi", "-i"])
        .arg(format!("testsrc=duration={SECS}:size=320x240:rate=25"))
        .args(["-f", "lavfi", "-i"])
        .arg(format!("sine=frequency=440:duration={SECS}"))
        .args(["-c:v", "mpeg4", "-c:a", "aac", "-shortest"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    out
}

/// FFmpeg's own time for what the extraction does to one file: probe, audio, keyframes.
fn floor_once(input: &std::path::Path, dir: &std::path::Path) -> Duration {
    let start = Instant::now();
    let run = |args: Vec<String>| {
        let ok = Command::new(&args[0])
            .args(&args[1..])
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "{args:?}");
    };
    let i = input.display().to_string();
    let s = |x: &str| x.to_owned();
    run(vec![
        s("ffprobe"),
        s("-v"),
        s("error"),
        s("-print_format"),
        s("json"),
        s("-show_streams"),
        s("-show_format"),
        i.clone(),
    ]);
    let audio = dir.join("audio-%03d.wav").display().to_string();
    run(vec![
        s("ffmpeg"),
        s("-nostdin"),
        s("-v"),
        s("error"),
        s("-y"),
        s("-i"),
        i.clone(),
        s("-vn"),
        s("-ac"),
        s("1"),
        s("-ar"),
        s("16000"),
        s("-c:a"),
        s("pcm_s16le"),
        s("-f"),
        s("segment"),
        s("-segment_time"),
        s("600"),
        s("-reset_timestamps"),
        s("1"),
        audio,
    ]);
    let frames = dir.join("frame-%02d.jpg").display().to_string();
    run(vec![
        s("ffmpeg"),
        s("-nostdin"),
        s("-v"),
        s("error"),
        s("-y"),
        s("-i"),
        i,
        s("-vf"),
        format!("fps={:.6},scale=320:-2", 3.0 / f64::from(SECS)),
        s("-frames:v"),
        s("3"),
        s("-q:v"),
        s("4"),
        frames,
    ]);
    start.elapsed()
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(((v.len().max(1) - 1) as f64 * p) as usize)
        .copied()
        .unwrap_or(0.0)
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("analysis: run with `cargo bench --bench analysis`");
        return;
    }
    let n: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(50);
    if Command::new("ffmpeg").arg("-version").output().is_err() {
        println!("analysis bench needs FFmpeg (scripts/services.sh installs it)");
        return;
    }
    let Some(stack) = common::Stack::start("analysis").await else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let clip = make_video(scratch.path());
    let bytes = std::fs::read(&clip).unwrap();
    // The floor: FFmpeg alone on the same files, one after another.
    let mut floor = Duration::ZERO;
    for _ in 0..n {
        let dir = tempfile::tempdir().unwrap();
        floor += floor_once(&clip, dir.path());
    }

    let mut s = stack.settings.clone();
    let ai = s.sections.get_mut("ai").unwrap();
    ai["kinds"]["video_analysis"]["simulated_step_ms"] = json!(0);
    ai["kinds"]["video_analysis"]["cost"] = json!(0);
    let app = common::TwoConsumers::start(&s).await;
    let (base, db, key) = (app.base.clone(), app.db.clone(), app.key.clone());
    let client = reqwest::Client::new();
    let mut uploads = Vec::new();
    for _ in 0..n {
        let form = reqwest::multipart::Form::new()
            .text("purpose", "video")
            .part(
                "file",
                reqwest::multipart::Part::bytes(bytes.clone())
                    .file_name("clip.mp4")
                    .mime_str("video/mp4")
                    .unwrap(),
            );
        let v: Value = client
            .post(format!("{base}/v1/uploads"))
            .bearer_auth(&key)
            .multipart(form)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        uploads.push(v["id"].as_str().unwrap().to_owned());
    }
    let start = Instant::now();
    let mut ids = Vec::new();
    for u in &uploads {
        let v: Value = client
            .post(format!("{base}/v1/tasks"))
            .bearer_auth(&key)
            .json(&json!({"kind": "video_analysis", "prompt": "a launch video", "params": {"upload_id": u}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        ids.push(v["id"].as_str().unwrap().to_owned());
    }
    loop {
        let done = task::Entity::find()
            .filter(task::Column::Id.is_in(ids.clone()))
            .filter(task::Column::Status.is_in([Status::Success, Status::Failed]))
            .count(&db)
            .await
            .unwrap();
        if done as usize == n {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(900),
            "{done} of {n} done"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let wall = start.elapsed();
    let failed = task::Entity::find()
        .filter(task::Column::Id.is_in(ids.clone()))
        .filter(task::Column::Status.eq(Status::Failed))
        .count(&db)
        .await
        .unwrap();
    // Each stage's wait: from the event that made its message (submitted, or the step
    // before done) to the event of its start.
    let events = event::Entity::find()
        .filter(event::Column::TaskId.is_in(ids.clone()))
        .order_by_asc(event::Column::Seq)
        .all(&db)
        .await
        .unwrap();
    let mut by_task: HashMap<&str, Vec<&event::Model>> = HashMap::new();
    for e in &events {
        by_task.entry(e.task_id.as_str()).or_default().push(e);
    }
    let steps = [
        "extract_audio",
        "transcribe",
        "summarize",
        "build_knowledge_entry",
    ];
    let mut waits: Vec<Vec<f64>> = vec![Vec::new(); steps.len()];
    let mut extract_ms = Vec::new();
    for evs in by_task.values() {
        let mut ready = evs.first().map(|e| e.created_at);
        for e in evs {
            let msg = e.message.as_deref().unwrap_or("");
            if let Some(i) = steps.iter().position(|s| msg == format!("{s} started")) {
                if let Some(r) = ready {
                    waits[i]
                        .push((e.created_at - r).num_microseconds().unwrap_or(0) as f64 / 1000.0);
                }
                if i == 0 {
                    ready = Some(e.created_at);
                }
            }
            if let Some(i) = steps
                .iter()
                .position(|s| msg.starts_with(&format!("{s} done")))
            {
                if i == 0
                    && let Some(r) = ready
                {
                    extract_ms
                        .push((e.created_at - r).num_microseconds().unwrap_or(0) as f64 / 1000.0);
                }
                ready = Some(e.created_at);
            }
        }
    }
    println!(
        "{n} videos of {SECS} s through 2 consumer processes (4 FFmpeg jobs each at most): {:.1} s wall, {failed} failed",
        wall.as_secs_f64()
    );
    println!(
        "floor, FFmpeg alone on the same {n} files one after another: {:.1} s ({:.0} ms a file); on 2 cores at best {:.1} s",
        floor.as_secs_f64(),
        floor.as_secs_f64() * 1000.0 / n as f64,
        floor.as_secs_f64() / 2.0
    );
    println!(
        "extraction step, start to done: p50 {:.0} ms, p99 {:.0} ms (FFmpeg, storage reads and writes)",
        pct(&mut extract_ms, 0.5),
        pct(&mut extract_ms, 0.99)
    );
    for (i, step) in steps.iter().enumerate() {
        println!(
            "  queue wait before {step:<22} p50 {:>7.0} ms  p99 {:>7.0} ms  max {:>7.0} ms",
            pct(&mut waits[i], 0.5),
            pct(&mut waits[i], 0.99),
            pct(&mut waits[i], 1.0)
        );
    }
    app.stop().await;
    stack.teardown().await;
}
