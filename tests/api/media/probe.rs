//! A video analysis's submission reads the video's length with ffprobe on the API's
//! machine (to pick its lane) only for a caller whose credits cover it, and once per
//! upload, a failed probe included (issue 55).

use serde_json::{Value, json};

use super::{MP4, file_of, media_app, media_done};
use crate::helpers::videos::{upload_video, video};
use crate::helpers::*;
use crate::on_every_store;

use conveyor::providers::ffmpeg::length;

on_every_store!(
    a_caller_without_the_credits_gets_402_before_any_probe,
    a_video_ffprobe_cannot_read_is_probed_once_for_every_submission,
);

async fn analyse(app: &TestApp, key: &str, upload: &str) -> (u16, Value) {
    let r = tasks::submit(
        app,
        key,
        json!({"kind": "video_analysis", "prompt": "p", "params": {"upload_id": upload}}),
    )
    .await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

async fn a_caller_without_the_credits_gets_402_before_any_probe(backend: Backend) {
    if !crate::helpers::videos::ffmpeg("probe_credits") {
        return;
    }
    let Some((env, app)) = media_app(backend, "probe_credits").await else {
        return;
    };
    let (_, key) = app.user("broke", 0).await;
    let upload = upload_video(&app, &key, video(3, true)).await;
    let (status, body) = analyse(&app, &key, &upload).await;
    assert_eq!(status, 402, "{body}");
    assert_eq!(body["error"]["code"], "insufficient_credits", "{body}");
    assert_eq!(length::runs(&upload), 0);
    let view = app.get_json(&key, &format!("/v1/uploads/{upload}")).await;
    assert_eq!(view.get("duration_ms"), None, "not read: {view}");
    media_done(env, app).await;
}

async fn a_video_ffprobe_cannot_read_is_probed_once_for_every_submission(backend: Backend) {
    // Without FFmpeg the extraction is simulated and nothing is probed at submission.
    if !crate::helpers::videos::ffmpeg("probe_cached") {
        return;
    }
    let Some((env, app)) = media_app(backend, "probe_cached").await else {
        return;
    };
    let (_, key) = app.user("retrier", 100).await;
    // An MP4's first bytes, then noise: stored as a video, unreadable to ffprobe.
    let upload = upload_video(&app, &key, file_of(MP4, 64 * 1024)).await;
    for _ in 0..3 {
        let (status, body) = analyse(&app, &key, &upload).await;
        assert_eq!(status, 202, "{body}");
    }
    assert_eq!(length::runs(&upload), 1, "one probe for three submissions");
    let view = app.get_json(&key, &format!("/v1/uploads/{upload}")).await;
    assert_eq!(view.get("duration_ms"), None, "{view}");
    media_done(env, app).await;
}
