//! An API of another shape than Replicate's, plugged in by configuration.

use serde_json::json;

use super::watch;
use crate::helpers::*;
use crate::on_every_backend;
use conveyor::broker::settings::QueueOverride;

on_every_backend!(an_api_of_another_shape_plugs_in_by_configuration,);

/// The configuration of docs/providers.md's "Any API of the same shape", as it is written
/// there.
async fn an_api_of_another_shape_plugs_in_by_configuration(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "parked_shape").await else {
        return;
    };
    let (base, studio) = crate::providers::fake_studio::start().await;
    let ai = env.settings.sections.get_mut("ai").unwrap();
    ai["providers"]["studio"] = json!({
        "protocol": "prediction",
        "base_url": base,
        "model": "studio-video-2",
        "inputs": { "prompt": "prompt", "duration": "params.seconds" },
        "prediction": {
            "create_path": "/v1/videos",
            "get_path": "/v1/videos/{id}",
            "cancel_path": "/v1/videos/{id}/cancel",
            "model_pointer": "/model",
            "input_pointer": "",
            "webhook_pointer": "/callback_url",
            "extra_body": { "mode": "pro" },
            "id_pointer": "/task_id",
            "status_pointer": "/state",
            "succeeded": ["done"],
            "failed": ["error", "canceled"],
            "output_pointer": "/result",
            "progress_pointer": "/percent",
            "error_pointer": "/message",
        },
    });
    ai["kinds"]["video"]["provider"] = json!("studio");
    for i in 1..=5 {
        env.settings.queues.insert(
            format!("ai.check.{i}"),
            QueueOverride {
                delay_ms: Some(250),
                ..Default::default()
            },
        );
    }
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("director", 100).await;
    let id = tasks::submit_id(
        &app,
        &key,
        json!({"kind": "video", "prompt": "waves ms=2000", "params": {"seconds": 5}}),
    )
    .await;
    let (task, seen) = watch(&app, &key, &id, |t| t["status"] == "SUCCESS").await;
    assert!(
        seen.iter()
            .any(|(s, p)| s == "WAITING" && *p > 0 && *p < 100),
        "the percent came through: {seen:?}"
    );
    assert_eq!(
        task["result"]["files"][0]["content_type"], "video/mp4",
        "{task}"
    );
    assert_eq!(task["result"]["provider"], "studio");
    assert_eq!(
        studio.bodies.lock().unwrap()[0],
        json!({ "mode": "pro", "prompt": "waves ms=2000", "duration": 5, "model": "studio-video-2" }),
        "the body as configured (no callback URL: none is configured)"
    );
    // A job that ends in `error` fails its task, its credits back.
    let before = app.get_json(&key, "/v1/me").await["credits"].clone();
    let failed = tasks::submit_id(
        &app,
        &key,
        json!({"kind": "video", "prompt": "fail ms=500"}),
    )
    .await;
    let (t, _) = watch(&app, &key, &failed, |t| t["status"] == "FAILED").await;
    assert!(
        t["error"]
            .as_str()
            .unwrap()
            .starts_with("provider_rejected"),
        "{t}"
    );
    assert_eq!(app.get_json(&key, "/v1/me").await["credits"], before);
    done(env, app).await;
}
