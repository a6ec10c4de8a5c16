//! Video analysis from a real upload, through real FFmpeg (on both stores): the audio is
//! extracted as 16 kHz mono WAV in segments (checked with ffprobe), keyframes are real
//! JPEGs, the transcript comes back in segment order, and every file is on the task;
//! inputs that cannot be analysed are refused (422) or fail with their code; FFmpeg runs
//! at most `max_concurrent` at once in a process whatever the queue prefetches; a
//! process started on chosen queues consumes only those.

use std::time::{Duration, Instant};

use conveyor::broker::settings::QueueOverride;
use serde_json::{Value, json};

use super::{PNG, fetch, file_of, media_done, media_env, upload};
use crate::helpers::videos::{upload_video, video};
use crate::helpers::*;
use crate::on_every_store;

on_every_store!(
    a_video_is_analysed_from_its_upload_with_real_ffmpeg,
    inputs_that_cannot_be_analysed_are_refused_or_fail_with_their_code,
    ffmpeg_runs_at_most_its_limit_at_once_whatever_the_prefetch,
);

/// ffprobe's reading of `bytes`: (sample rate, channels) of its first audio stream.
fn audio_format(bytes: &[u8]) -> (String, i64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.wav");
    std::fs::write(&path, bytes).unwrap();
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-print_format", "json", "-show_streams"])
        .arg(&path)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["streams"][0];
    (
        s["sample_rate"].as_str().unwrap().to_owned(),
        s["channels"].as_i64().unwrap(),
    )
}

async fn analysis_app(backend: Backend, test: &str) -> Option<(TestEnv, TestApp)> {
    if !crate::helpers::videos::ffmpeg(test) {
        return None;
    }
    let mut env = media_env(backend, test).await?;
    let ai = env.settings.sections.get_mut("ai").unwrap();
    // Segments of 2 s: a 5 s clip is three transcription requests.
    ai["providers"]["ffmpeg"]["segment_secs"] = json!(2);
    let app = spawn_app(&env).await;
    app.start_consumers();
    Some((env, app))
}

async fn a_video_is_analysed_from_its_upload_with_real_ffmpeg(backend: Backend) {
    let Some((env, app)) = analysis_app(backend, "analysis_run").await else {
        return;
    };
    let (_, key) = app.user("editor", 100).await;
    let upload = upload_video(&app, &key, video(5, true)).await;
    let id = tasks::submit_id(
        &app,
        &key,
        json!({"kind": "video_analysis", "prompt": "a tea ceremony", "params": {"upload_id": upload}}),
    )
    .await;
    let task = tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    let extracted = &task["result"]["extract_audio"];
    let audio = extracted["audio"].as_array().unwrap();
    assert_eq!(audio.len(), 3, "5 s in 2 s segments: {extracted}");
    let starts: Vec<f64> = audio
        .iter()
        .map(|a| a["start_s"].as_f64().unwrap())
        .collect();
    assert_eq!(starts, [0.0, 2.0, 4.0]);
    assert!(
        (extracted["duration_s"].as_f64().unwrap() - 5.0).abs() < 0.2,
        "{extracted}"
    );
    assert_eq!(extracted["keyframes"].as_array().unwrap().len(), 3);
    // The transcript: one piece per segment, in their order.
    let transcript = task["result"]["transcribe"]["transcript"].as_str().unwrap();
    let at = |piece: &str| {
        transcript
            .find(piece)
            .unwrap_or_else(|| panic!("{transcript}"))
    };
    assert!(
        at("[1/3]") < at("[2/3]") && at("[2/3]") < at("[3/3]"),
        "{transcript}"
    );
    // Every file is a real one on the task, downloadable.
    let files = task["files"].as_array().unwrap_or_else(|| panic!("{task}"));
    let of = |t: &str| {
        files
            .iter()
            .filter(|f| f["content_type"] == t)
            .collect::<Vec<_>>()
    };
    assert_eq!(of("audio/x-wav").len(), 3, "{task}");
    assert_eq!(of("image/jpeg").len(), 3, "{task}");
    for wav in of("audio/x-wav") {
        let bytes = fetch(&app, wav["url"].as_str().unwrap(), &[])
            .await
            .bytes()
            .await
            .unwrap();
        assert_eq!(audio_format(&bytes), ("16000".to_owned(), 1), "16 kHz mono");
    }
    for jpg in of("image/jpeg") {
        let bytes = fetch(&app, jpg["url"].as_str().unwrap(), &[])
            .await
            .bytes()
            .await
            .unwrap();
        assert!(bytes.starts_with(&[0xFF, 0xD8, 0xFF]), "a JPEG");
    }
    // FFmpeg's scratch directories went with the step.
    let scratch = conveyor::providers::ffmpeg::scratch_root();
    let left: Vec<_> = std::fs::read_dir(&scratch)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().contains(&id))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    // The video is found by meaning, by its owner only; its vectors are not in the result.
    assert!(
        task["result"]["build_knowledge_entry"]
            .get("vectors")
            .is_none(),
        "{task}"
    );
    let found =
        crate::search_sync::search_until(&app, &key, "semantic=the%20tea%20ceremony%20video", 1)
            .await;
    let hit = &found["items"][0];
    assert_eq!(hit["kind"], "video_analysis", "{found}");
    assert!(hit["score"].as_f64().unwrap() > 0.2, "{found}");
    let by_words = app
        .get_json(
            &key,
            "/v1/materials/search?semantic=quarterly%20tax%20filing",
        )
        .await;
    assert_eq!(by_words["total"], 0, "nothing near: {by_words}");
    let (_, stranger) = app.user("stranger", 100).await;
    let theirs = app
        .get_json(
            &stranger,
            "/v1/materials/search?semantic=the%20tea%20ceremony%20video",
        )
        .await;
    assert_eq!(theirs["total"], 0, "another tenant's video: {theirs}");
    media_done(env, app).await;
}

async fn inputs_that_cannot_be_analysed_are_refused_or_fail_with_their_code(backend: Backend) {
    let Some((env, app)) = analysis_app(backend, "analysis_inputs").await else {
        return;
    };
    let (_, key) = app.user("editor", 100).await;
    let (_, other) = app.user("other", 100).await;
    let submit = |key: String, params: Value| {
        let app = &app;
        async move {
            let r = tasks::submit(
                app,
                &key,
                json!({"kind": "video_analysis", "prompt": "p", "params": params}),
            )
            .await;
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap())
        }
    };
    let field = |v: &Value| v["error"]["field"].as_str().map(str::to_owned);
    let (status, body) = submit(key.clone(), json!({})).await;
    assert_eq!(
        (status, field(&body)),
        (422, Some("params.upload_id".into())),
        "{body}"
    );
    let theirs = upload_video(&app, &other, video(3, true)).await;
    let (status, body) = submit(key.clone(), json!({"upload_id": theirs})).await;
    assert_eq!(
        (status, field(&body)),
        (422, Some("params.upload_id".into())),
        "{body}"
    );
    let (_, image) = upload(&app, &key, "image", "a.png", file_of(PNG, 2048)).await;
    let (status, body) = submit(key.clone(), json!({"upload_id": image["id"]})).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a video"),
        "{body}"
    );
    // A silent video is accepted, and fails with its code: no credits spent.
    let silent = upload_video(&app, &key, video(3, false)).await;
    let (status, body) = submit(key.clone(), json!({"upload_id": silent})).await;
    assert_eq!(status, 202, "{body}");
    let t = tasks::wait_status(&app, &key, body["id"].as_str().unwrap(), "FAILED").await;
    assert!(
        t["error"].as_str().unwrap().starts_with("no_audio_track:"),
        "{t}"
    );
    assert_eq!(app.get_json(&key, "/v1/me").await["credits"], 100);
    media_done(env, app).await;
}

/// FFmpeg processes running for `ids` now (their scratch directories name the task).
fn ffmpeg_for(ids: &[String]) -> usize {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .flatten()
        .filter_map(|p| std::fs::read(p.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).into_owned())
        .filter(|c| c.starts_with("ffmpeg") && ids.iter().any(|id| c.contains(id.as_str())))
        .count()
}

async fn ffmpeg_runs_at_most_its_limit_at_once_whatever_the_prefetch(backend: Backend) {
    if !crate::helpers::videos::ffmpeg("analysis_limit") {
        return;
    }
    let Some(mut env) = media_env(backend, "analysis_limit").await else {
        return;
    };
    env.settings.queues.insert(
        "ai.media.extract".into(),
        QueueOverride {
            prefetch: Some(12),
            ..Default::default()
        },
    );
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("editor", 1000).await;
    let upload = upload_video(&app, &key, video(20, true)).await;
    let mut ids = Vec::new();
    for i in 0..12 {
        ids.push(
            tasks::submit_id(
                &app,
                &key,
                json!({"kind": "video_analysis", "prompt": format!("clip {i}"), "params": {"upload_id": upload}}),
            )
            .await,
        );
    }
    // Sampled every 2 ms beside the run.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (stop, ids) = (stop.clone(), ids.clone());
        std::thread::spawn(move || {
            let mut most = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(ffmpeg_for(&ids));
                std::thread::sleep(Duration::from_millis(2));
            }
            most
        })
    };
    let started = Instant::now();
    for id in &ids {
        tasks::wait_status(&app, &key, id, "SUCCESS").await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = sampler.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(most <= 4, "{most} FFmpeg processes at once");
    assert!(most >= 2, "they ran side by side ({most})");
    media_done(env, app).await;
}

/// A consumer process started on chosen queues (`conveyor consume --queues`) consumes
/// only those: the extraction runs, the next stage waits in its queue until a process
/// that consumes it starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_started_on_chosen_queues_consumes_only_those() {
    if !crate::helpers::videos::ffmpeg("analysis_queues") {
        return;
    }
    let Some(env) = media_env(Backend::RabbitPostgres, "analysis_queues").await else {
        return;
    };
    let app = spawn_app(&env).await;
    let (_, key) = app.user("editor", 100).await;
    let upload = upload_video(&app, &key, video(3, true)).await;
    let token = tokio_util::sync::CancellationToken::new();
    let extract_only = {
        let (p, t) = (app.platform.clone(), token.clone());
        tokio::spawn(async move {
            conveyor::app::run_workers(
                &p,
                conveyor::domains::ALL,
                Some(&["ai.media.extract".to_owned()]),
                t,
            )
            .await
        })
    };
    let id = tasks::submit_id(
        &app,
        &key,
        json!({"kind": "video_analysis", "prompt": "p", "params": {"upload_id": upload}}),
    )
    .await;
    let asr = app
        .platform
        .broker
        .topology()
        .queue(&conveyor::domains::ai_tasks::queues::AI_MEDIA_ASR)
        .name;
    wait_until(
        Duration::from_secs(20),
        "the transcription waiting in its queue",
        || async { app.platform.broker.depth(&asr).await.unwrap_or(0) == 1 },
    )
    .await;
    // Nobody can take it: this process consumes the extraction's queue, nothing else.
    let consumed: Vec<&str> = app
        .platform
        .tally
        .consumed()
        .iter()
        .map(|(q, _)| *q)
        .collect();
    assert_eq!(consumed, ["ai.media.extract"]);
    let t = tasks::task(&app, &key, &id).await;
    assert_eq!(
        (t["status"].as_str(), t["progress"].as_i64()),
        (Some("PROCESSING"), Some(25)),
        "{t}"
    );
    assert_eq!(
        app.platform.broker.depth(&asr).await.unwrap(),
        1,
        "nobody took it"
    );
    // A process for the other stages finishes it.
    let rest = {
        let (p, t) = (app.platform.clone(), token.clone());
        let queues = ["ai.media.asr", "ai.media.summary", "ai.media.vectorize"].map(str::to_owned);
        tokio::spawn(async move {
            conveyor::app::run_workers(&p, conveyor::domains::ALL, Some(&queues), t).await
        })
    };
    tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    token.cancel();
    let _ = extract_only.await;
    let _ = rest.await;
    media_done(env, app).await;
}

/// A video longer than `long_video_secs` is extracted and transcribed on the long queues
/// (its length read with ffprobe at submission, where the upload is stored): with only
/// the regular queues consumed, a short video finishes while the long one waits in
/// `ai.media.extract.long`, until a process for the long queues starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_video_takes_the_long_queues_while_short_ones_finish() {
    if !crate::helpers::videos::ffmpeg("analysis_long") {
        return;
    }
    let Some(mut env) = media_env(Backend::RabbitPostgres, "analysis_long").await else {
        return;
    };
    env.settings.sections.get_mut("ai").unwrap()["kinds"]["video_analysis"]["long_video_secs"] =
        json!(4);
    let app = spawn_app(&env).await;
    let (_, key) = app.user("editor", 100).await;
    let submit = |upload: String| {
        let (app, key) = (&app, &key);
        async move {
            tasks::submit_id(
                app,
                key,
                json!({"kind": "video_analysis", "prompt": "p", "params": {"upload_id": upload}}),
            )
            .await
        }
    };
    let long_upload = upload_video(&app, &key, video(6, true)).await;
    let long = submit(long_upload.clone()).await;
    // Its length was read once, kept on the upload's row and shown with it.
    let kept = app
        .get_json(&key, &format!("/v1/uploads/{long_upload}"))
        .await;
    let ms = kept["duration_ms"]
        .as_i64()
        .unwrap_or_else(|| panic!("{kept}"));
    assert!((5800..=6200).contains(&ms), "{kept}");
    let short = submit(upload_video(&app, &key, video(3, true)).await).await;
    let token = tokio_util::sync::CancellationToken::new();
    let regular = {
        let (p, t) = (app.platform.clone(), token.clone());
        let queues = [
            "ai.media.extract",
            "ai.media.asr",
            "ai.media.summary",
            "ai.media.vectorize",
        ]
        .map(str::to_owned);
        tokio::spawn(async move {
            conveyor::app::run_workers(&p, conveyor::domains::ALL, Some(&queues), t).await
        })
    };
    tasks::wait_status(&app, &key, &short, "SUCCESS").await;
    let long_queue = app
        .platform
        .broker
        .topology()
        .queue(&conveyor::domains::ai_tasks::queues::AI_MEDIA_EXTRACT_LONG)
        .name;
    assert_eq!(app.platform.broker.depth(&long_queue).await.unwrap(), 1);
    assert_eq!(tasks::task(&app, &key, &long).await["status"], "PENDING");
    let long_lane = {
        let (p, t) = (app.platform.clone(), token.clone());
        let queues = ["ai.media.extract.long", "ai.media.asr.long"].map(str::to_owned);
        tokio::spawn(async move {
            conveyor::app::run_workers(&p, conveyor::domains::ALL, Some(&queues), t).await
        })
    };
    let t = tasks::wait_status(&app, &key, &long, "SUCCESS").await;
    assert!((t["result"]["extract_audio"]["duration_s"].as_f64().unwrap() - 6.0).abs() < 0.2);
    // The lane is the server's to set.
    let r = tasks::submit(
        &app,
        &key,
        json!({"kind": "copywriting", "prompt": "p", "params": {"_lane": "long"}}),
    )
    .await;
    assert_eq!(r.status(), 422);
    token.cancel();
    let _ = regular.await;
    let _ = long_lane.await;
    media_done(env, app).await;
}
