//! Real media for the tests, made by FFmpeg in the test: a test-pattern video with a
//! tone for its soundtrack (or none), and its upload.

use std::collections::HashMap;
use std::sync::Mutex;

use super::TestApp;

/// An MP4 of `secs` seconds (320x240 test pattern at 10 fps), with a 440 Hz tone when
/// `audio`; made once per shape and kept for the run.
pub fn video(secs: u32, audio: bool) -> Vec<u8> {
    static MADE: Mutex<Option<HashMap<(u32, bool), Vec<u8>>>> = Mutex::new(None);
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

/// Uploads `bytes` as a video of `key`'s; the upload's id.
pub async fn upload_video(app: &TestApp, key: &str, bytes: Vec<u8>) -> String {
    let form = reqwest::multipart::Form::new()
        .text("purpose", "video")
        .part(
            "file",
            reqwest::multipart::Part::bytes(bytes)
                .file_name("clip.mp4")
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
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["status"], "READY", "{v}");
    v["id"].as_str().unwrap().to_owned()
}

/// A 3-second video with sound, uploaded for `key`: what a video analysis takes.
pub async fn analysable(app: &TestApp, key: &str) -> String {
    upload_video(app, key, video(3, true)).await
}
