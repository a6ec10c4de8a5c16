//! One-click retry of a failed pipeline: a video whose summary the provider refused is
//! retried from that step, with the extraction and the transcript it had (not run
//! again), charged once more, linked to the task it retries; a second click answers the
//! same retry; a task that did not fail is not retried, another user's is 404.

use serde_json::json;

use super::fake_openai;
use crate::helpers::videos::{upload_video, video};
use crate::helpers::*;
use crate::media::{media_done, media_env};
use crate::on_every_backend;

on_every_backend!(a_failed_pipeline_is_retried_from_the_step_that_failed);

async fn a_failed_pipeline_is_retried_from_the_step_that_failed(backend: Backend) {
    if !crate::helpers::videos::ffmpeg("task_retry") {
        return;
    }
    let Some(mut env) = media_env(backend, "task_retry").await else {
        return;
    };
    let (url, _fake) = fake_openai::start(0).await;
    let ai = env.settings.sections.get_mut("ai").unwrap();
    ai["providers"]["openai"]["base_url"] = json!(url);
    ai["providers"]["openai"]["api_key"] = json!("sk-test");
    ai["kinds"]["video_analysis"]["steps"]["summarize"] = json!("openai");
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (user, key) = app.user("editor", 100).await;
    let upload = upload_video(&app, &key, video(3, true)).await;
    let id = tasks::submit_id(
        &app,
        &key,
        json!({"kind": "video_analysis", "prompt": "bad-once tea ceremony", "params": {"upload_id": upload}}),
    )
    .await;
    let failed = tasks::wait_status(&app, &key, &id, "FAILED").await;
    assert_eq!(failed["step"], "summarize", "{failed}");
    assert_eq!(app.credits(&user.id).await, 100, "refunded");

    let retry = |k: String| {
        let (app, id) = (&app, id.clone());
        async move {
            let r = app
                .client
                .post(app.url(&format!("/v1/tasks/{id}/retry")))
                .bearer_auth(k)
                .send()
                .await
                .unwrap();
            (
                r.status().as_u16(),
                r.json::<serde_json::Value>().await.unwrap(),
            )
        }
    };
    let (status, made) = retry(key.clone()).await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["retry_of"], id.as_str());
    let again = retry(key.clone()).await;
    assert_eq!(
        (again.0, &again.1["id"]),
        (200, &made["id"]),
        "a double click makes one retry"
    );
    let (_, stranger) = app.user("stranger", 100).await;
    assert_eq!(retry(stranger).await.0, 404);

    let rid = made["id"].as_str().unwrap();
    let done = tasks::wait_status(&app, &key, rid, "SUCCESS").await;
    // The extraction and transcript are the failed task's own (its files, its id), and
    // only the summary and the entry ran again.
    let audio = done["result"]["extract_audio"]["audio"][0]["key"]
        .as_str()
        .unwrap();
    assert!(audio.contains(&id), "reused, not extracted again: {audio}");
    assert_eq!(
        done["result"]["transcribe"],
        failed_result(&app, &key, &id).await["transcribe"]
    );
    assert_eq!(done["result"]["summarize"]["provider"], "openai");
    assert!(done["result"]["text"].is_string(), "{done}");
    assert_eq!(app.credits(&user.id).await, 90, "charged once more");
    // A task that did not fail is not retried.
    let r = app
        .client
        .post(app.url(&format!("/v1/tasks/{rid}/retry")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["error"]["code"],
        "not_retryable"
    );
    media_done(env, app).await;
}

/// A failed task's earlier outputs, as the database keeps them (the API shows a result
/// only on success).
async fn failed_result(app: &TestApp, _key: &str, id: &str) -> serde_json::Value {
    let t = conveyor::domains::ai_tasks::store::get(&app.platform.db, id)
        .await
        .unwrap()
        .unwrap();
    serde_json::from_str(t.result.as_deref().unwrap()).unwrap()
}
