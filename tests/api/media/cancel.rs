//! A cancel while FFmpeg extracts kills the process (checked by its pid: gone, not left
//! running or as an orphan) and removes its scratch directory. FFmpeg here reads its
//! input at the video's own pace (`-re`, through the `program` setting), so the
//! extraction of a 30 s clip is still running when the cancel comes.

use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;

use serde_json::{Value, json};

use super::{media_done, media_env};
use crate::helpers::videos::{upload_video, video};
use crate::helpers::*;
use crate::on_every_store;

on_every_store!(a_cancel_during_extraction_kills_ffmpeg_and_cleans_its_scratch);

/// The pids of FFmpeg processes working for `id` (their scratch directory names it).
fn ffmpeg_pids(id: &str) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|p| {
            let pid = p.file_name().to_str()?.parse::<u32>().ok()?;
            let cmd = String::from_utf8_lossy(&std::fs::read(p.path().join("cmdline")).ok()?)
                .into_owned();
            (cmd.starts_with("ffmpeg") && cmd.contains(id)).then_some(pid)
        })
        .collect()
}

/// Whether `pid` still runs (a zombie waiting to be reaped counts as gone: it holds no
/// resources and runs nothing).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit(')')
                .next()
                .map(|rest| rest.trim().starts_with('Z'))
        })
        .is_some_and(|zombie| !zombie)
}

async fn a_cancel_during_extraction_kills_ffmpeg_and_cleans_its_scratch(backend: Backend) {
    if !crate::helpers::videos::ffmpeg("analysis_cancel") {
        return;
    }
    let Some(mut env) = media_env(backend, "analysis_cancel").await else {
        return;
    };
    let bin = tempfile::tempdir().unwrap();
    let slow = bin.path().join("ffmpeg-at-pace");
    std::fs::write(&slow, "#!/bin/sh\nexec ffmpeg -re \"$@\"\n").unwrap();
    std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ai = env.settings.sections.get_mut("ai").unwrap();
    ai["providers"]["ffmpeg"]["program"] = json!(slow.display().to_string());
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("editor", 100).await;
    let upload = upload_video(&app, &key, video(30, true)).await;
    let id = tasks::submit_id(
        &app,
        &key,
        json!({"kind": "video_analysis", "prompt": "p", "params": {"upload_id": upload}}),
    )
    .await;
    let mut pids = Vec::new();
    wait_until(Duration::from_secs(20), "FFmpeg extracting", || {
        pids = ffmpeg_pids(&id);
        std::future::ready(!pids.is_empty())
    })
    .await;
    let scratch = conveyor::providers::ffmpeg::scratch_root();
    let of_task = || -> Vec<String> {
        std::fs::read_dir(&scratch)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.contains(&id))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(of_task().len(), 1, "its scratch directory while it runs");
    let r = app
        .client
        .post(app.url(&format!("/v1/tasks/{id}/cancel")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "CANCELED");
    wait_until(Duration::from_secs(10), "FFmpeg killed", || {
        std::future::ready(pids.iter().all(|p| !running(*p)) && ffmpeg_pids(&id).is_empty())
    })
    .await;
    wait_until(Duration::from_secs(10), "its scratch removed", || {
        std::future::ready(of_task().is_empty())
    })
    .await;
    // Nothing else ran for it: no files, the task stays canceled (read once its
    // extraction's delivery was settled and anything it would have sent on was handled).
    for queue in ["ai.media.extract", "ai.media.asr"] {
        app.drain_key(queue).await;
    }
    let t = tasks::task(&app, &key, &id).await;
    assert_eq!(t["status"], "CANCELED", "{t}");
    assert!(t["files"].as_array().is_none_or(|f| f.is_empty()), "{t}");
    media_done(env, app).await;
}
