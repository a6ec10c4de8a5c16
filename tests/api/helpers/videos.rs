//! Real media for the tests, made by FFmpeg in the test: a test-pattern video with a
//! tone for its soundtrack (or none), and its upload. Without FFmpeg on the machine
//! (a fresh one before `scripts/services.sh`), the tests that are about media skip (fail
//! with `CONVEYOR_REQUIRE_SERVICES=1`) and the others run the pipeline's extraction on
//! the simulator ([`ffmpeg_or_simulated`]).

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

use super::TestApp;

/// Videos made so far, by (seconds, with sound).
type Made = Option<HashMap<(u32, bool), Vec<u8>>>;

/// An MP4 of `secs` seconds (320x240 test pattern at 10 fps), with a 440 Hz tone when
/// `audio`; made once per shape and kept for the run.
pub fn video(secs: u32, audio: bool) -> Vec<u8> {
    static MADE: Mutex<Made> = Mutex::new(None);
    let mut made = MADE.lock().unwrap();
    let made = made.get_or_insert_with(HashMap::new);
    made.entry((secs, audio))
        .or_insert_with(|| {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("clip.mp4");
            let d = secs.to_string();
            let mut args: Vec<String> = ["-nostdin", "-v", "error", "-f", "lavfi", "-i"]
                .map(str::to_owned)
                .into();
            args.push(format!("testsrc=duration={d}:size=320x240:rate=10"));
            if audio {
                args.extend(["-f".into(), "lavfi".into(), "-i".into()]);
                args.push(format!("sine=frequency=440:duration={d}"));
                args.extend(["-c:a".into(), "aac".into()]);
            }
            args.extend(["-c:v".into(), "mpeg4".into(), "-shortest".into()]);
            args.push(out.display().to_string());
            let status = std::process::Command::new("ffmpeg")
                .args(&args)
                .status()
                .expect("ffmpeg (scripts/services.sh installs it)");
            assert!(status.success(), "ffmpeg made the test video");
            std::fs::read(&out).unwrap()
        })
        .clone()
}

/// `POST /v1/uploads` with `purpose` and `bytes` named `name`: status and body.
pub async fn upload(
    app: &TestApp,
    key: &str,
    purpose: &str,
    name: &str,
    bytes: Vec<u8>,
) -> (u16, Value) {
    let form = reqwest::multipart::Form::new()
        .text("purpose", purpose.to_owned())
        .part(
            "file",
            reqwest::multipart::Part::bytes(bytes)
                .file_name(name.to_owned())
                .mime_str("video/mp4")
                .unwrap(),
        );
    let r = app
        .client
        .post(app.url("/v1/uploads"))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// Uploads `bytes` as a video of `key`'s; the upload's id.
pub async fn upload_video(app: &TestApp, key: &str, bytes: Vec<u8>) -> String {
    let (_, v) = upload(app, key, "video", "clip.mp4", bytes).await;
    assert_eq!(v["status"], "READY", "{v}");
    v["id"].as_str().unwrap().to_owned()
}

/// A 3-second video with sound, uploaded for `key`: what a video analysis takes (without
/// FFmpeg, an MP4's first bytes: the simulated extraction reads nothing).
pub async fn analysable(app: &TestApp, key: &str) -> String {
    let bytes = if ffmpeg_available() {
        video(3, true)
    } else {
        let mut b = b"\0\0\0\x18ftypmp42\0\0\0\0mp42isom".to_vec();
        b.resize(4096, 0);
        b
    };
    upload_video(app, key, bytes).await
}

/// Whether FFmpeg and ffprobe run here.
pub fn ffmpeg_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        ["ffmpeg", "ffprobe"].iter().all(|p| {
            std::process::Command::new(p)
                .arg("-version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
    })
}

/// For a test about media: whether FFmpeg is here; a skip line if not (a failure when
/// CONVEYOR_REQUIRE_SERVICES=1).
pub fn ffmpeg(test: &str) -> bool {
    if ffmpeg_available() {
        return true;
    }
    assert!(
        !super::required(),
        "{test}: FFmpeg is not installed and CONVEYOR_REQUIRE_SERVICES=1 (scripts/services.sh installs it)"
    );
    eprintln!("SKIPPED {test}: FFmpeg is not installed (scripts/services.sh installs it)");
    false
}

/// Settings for a test that is not about media: where FFmpeg is missing, the pipeline's
/// extraction runs on the simulator (which reads no upload).
pub fn ffmpeg_or_simulated(settings: &mut conveyor::settings::Settings) {
    if !ffmpeg_available()
        && let Some(steps) = settings
            .sections
            .get_mut("ai")
            .and_then(|ai| ai.pointer_mut("/kinds/video_analysis/steps"))
    {
        steps["extract_audio"] = serde_json::json!("simulated");
    }
}
