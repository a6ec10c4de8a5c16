//! The pipeline's speech to text on a real provider (the OpenAI-compatible fake): each
//! audio segment FFmpeg extracted is one transcription request, several at once, and the
//! transcript comes back in segment order (the first segment's answer is the slowest),
//! the seconds the provider billed recorded as usage; the summary is then written from
//! the transcript by the chat model.

use serde_json::json;

use super::fake_openai;
use crate::helpers::videos::{upload_video, video};
use crate::helpers::*;
use crate::media::{media_done, media_env};
use crate::on_every_backend;

on_every_backend!(speech_to_text_runs_per_segment_and_comes_back_in_order);

async fn speech_to_text_runs_per_segment_and_comes_back_in_order(backend: Backend) {
    if !crate::helpers::videos::ffmpeg("transcripts") {
        return;
    }
    let Some(mut env) = media_env(backend, "transcripts").await else {
        return;
    };
    let (url, fake) = fake_openai::start(0).await;
    let ai = env.settings.sections.get_mut("ai").unwrap();
    ai["providers"]["openai"]["base_url"] = json!(url);
    ai["providers"]["openai"]["api_key"] = json!("sk-test");
    ai["providers"]["ffmpeg"]["segment_secs"] = json!(2);
    ai["kinds"]["video_analysis"]["steps"]["transcribe"] = json!("openai");
    ai["kinds"]["video_analysis"]["steps"]["summarize"] = json!("openai");
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("editor", 100).await;
    let upload = upload_video(&app, &key, video(5, true)).await;
    let id = tasks::submit_id(
        &app,
        &key,
        json!({"kind": "video_analysis", "prompt": "p", "params": {"upload_id": upload}}),
    )
    .await;
    let task = tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    let t = &task["result"]["transcribe"];
    let names: Vec<String> = (0..3)
        .map(|i| format!("transcript of {id}-extract_audio-audio-{i:03}.wav by whisper-1"))
        .collect();
    assert_eq!(t["transcript"], names.join(" "), "{t}");
    let starts: Vec<f64> = t["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["start_s"].as_f64().unwrap())
        .collect();
    assert_eq!(starts, [0.0, 2.0, 4.0]);
    assert_eq!(t["provider"], "openai");
    // What the provider billed: whole seconds per request (each segment rounded up).
    let seconds = t["usage"]["seconds"].as_f64().unwrap();
    assert!((5.0..=8.0).contains(&seconds), "{seconds}");
    // The summary is written from the transcript, on the chat model, streamed.
    let summary = task["result"]["summarize"]["summary"].as_str().unwrap();
    assert!(
        summary.contains(&names[0]) && summary.contains(&names[2]),
        "{summary}"
    );
    assert_eq!(task["result"]["summarize"]["provider"], "openai");
    assert_eq!(
        fake.calls.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "one chat call: the summary (transcriptions are not chat calls)"
    );
    media_done(env, app).await;
}
