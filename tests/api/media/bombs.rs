//! The extraction's bounds (issue 55: a 48,760-byte Matroska became 230 MB of stored
//! WAV against a 21 MB quota). A few kilobytes of FLAC silence decode to minutes of
//! 16 kHz WAV: one that declares its length honestly is refused for the quota before
//! FFmpeg runs; one whose container declares 2 s is cut there and refused as lying. Both
//! fail with their credits back and store nothing; an honest video still succeeds within
//! the same quota, its files counted once.

use serde_json::{Value, json};

use super::{media_done, media_env};
use crate::helpers::videos::{upload_video, video};
use crate::helpers::*;
use crate::on_every_store;

on_every_store!(a_decompression_bomb_fails_with_its_refund_and_stores_nothing_over_the_quota);

const MIB: u64 = 1024 * 1024;

/// A Matroska of `secs` seconds of silence (8 kHz FLAC in frames of 65,535 samples:
/// ~4 kB for 500 s, which is 16 MB of the extraction's WAV); with `declared`, its
/// Duration element rewritten to that many seconds.
fn bomb(secs: u32, declared: Option<f64>) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bomb.mkv");
    let status = std::process::Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-f", "lavfi", "-i"])
        .arg("anullsrc=r=8000:cl=mono")
        .args([
            "-t",
            &secs.to_string(),
            "-c:a",
            "flac",
            "-frame_size",
            "65535",
        ])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "ffmpeg made the bomb");
    let mut bytes = std::fs::read(&out).unwrap();
    if let Some(s) = declared {
        // Segment Info's Duration (0x4489, an 8-byte float, in milliseconds).
        let at = bytes
            .windows(3)
            .position(|w| w == [0x44, 0x89, 0x88])
            .expect("a Duration element");
        bytes[at + 3..at + 11].copy_from_slice(&(s * 1000.0).to_be_bytes());
    }
    bytes
}

async fn a_decompression_bomb_fails_with_its_refund_and_stores_nothing_over_the_quota(
    backend: Backend,
) {
    let test = "analysis_bomb";
    if !crate::helpers::videos::ffmpeg(test) {
        return;
    }
    let Some(mut env) = media_env(backend, test).await else {
        return;
    };
    let quota = 5 * MIB;
    env.settings.storage.quota_bytes = quota;
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("bomber", 100).await;
    let used = |me: &Value| me["storage"]["used_bytes"].as_u64().unwrap();
    let honest = bomb(500, None);
    let liar = bomb(500, Some(2.0));
    assert!(honest.len() < 64 * 1024 && liar.len() < 64 * 1024);
    let uploads = [
        (upload_video(&app, &key, honest).await, "storage_quota:"),
        (upload_video(&app, &key, liar).await, "media_unreadable:"),
    ];
    let held = used(&app.get_json(&key, "/v1/me").await);
    for (upload, code) in uploads {
        let id = tasks::submit_id(
            &app,
            &key,
            json!({"kind": "video_analysis", "prompt": "p", "params": {"upload_id": upload}}),
        )
        .await;
        let t = tasks::wait_status(&app, &key, &id, "FAILED").await;
        let error = t["error"].as_str().unwrap_or_else(|| panic!("{t}"));
        assert!(error.starts_with(code), "{code}: {t}");
        assert!(
            t["files"].as_array().is_none_or(Vec::is_empty),
            "nothing stored for it: {t}"
        );
        let me = app.get_json(&key, "/v1/me").await;
        assert_eq!(me["credits"], 100, "its refund: {me}");
        assert_eq!(used(&me), held, "nothing generated was counted: {me}");
        assert!(used(&me) <= quota, "{me}");
    }
    // An honest video within the same quota: its files stored and counted once.
    let clip = video(3, true);
    let clip_len = clip.len() as u64;
    let upload = upload_video(&app, &key, clip).await;
    let id = tasks::submit_id(
        &app,
        &key,
        json!({"kind": "video_analysis", "prompt": "p", "params": {"upload_id": upload}}),
    )
    .await;
    let t = tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    let files = t["files"].as_array().unwrap_or_else(|| panic!("{t}"));
    assert_eq!(files.len(), 4, "a segment and 3 keyframes: {t}");
    let stored: u64 = files.iter().map(|f| f["size"].as_u64().unwrap()).sum();
    let me = app.get_json(&key, "/v1/me").await;
    assert_eq!(used(&me), held + clip_len + stored, "{me}");
    assert!(used(&me) <= quota);
    media_done(env, app).await;
}
