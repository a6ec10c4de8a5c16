//! At a heavy backlog of the video-analysis pipeline the listed kinds are shed (503
//! `shedding_load` with `Retry-After`) while video analysis and the other kinds are still
//! taken; once the pipeline catches up, they are taken again.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heavy_pipeline_backlog_sheds_the_listed_kinds_until_it_drains() {
    // With RabbitMQ the API runs no consumer: the pipeline's messages wait until the test
    // starts them.
    let Some(mut env) = TestEnv::new(Backend::RabbitPostgres, "shedding").await else {
        return;
    };
    let ai = env.settings.sections.get_mut("ai").unwrap();
    ai["shedding"] = json!({ "backlog": 2, "kinds": ["image", "video"], "retry_after_secs": 7 });
    let app = spawn_app(&env).await;
    let (_, key) = app.user("studio", 1000).await;
    let submit = |body: Value| {
        let (app, key) = (&app, &key);
        async move {
            let r = tasks::submit(app, key, body).await;
            let retry = r
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned());
            (r.status().as_u16(), retry, r.json::<Value>().await.unwrap())
        }
    };
    for i in 0..2 {
        let upload = videos::analysable(&app, &key).await;
        let body = json!({"kind": "video_analysis", "prompt": format!("v{i}"), "params": {"upload_id": upload}});
        assert_eq!(submit(body).await.0, 202);
    }
    let image = json!({"kind": "image", "prompt": "a teapot"});
    wait_until(Duration::from_secs(10), "the backlog read", || async {
        submit(image.clone()).await.0 == 503
    })
    .await;
    let (status, retry, body) = submit(image.clone()).await;
    assert_eq!((status, retry.as_deref()), (503, Some("7")), "{body}");
    assert_eq!(body["error"]["code"], "shedding_load", "{body}");
    // The core path, and the kinds not listed, are still taken.
    let upload = videos::analysable(&app, &key).await;
    let (status, _, _) =
        submit(json!({"kind": "video_analysis", "prompt": "v2", "params": {"upload_id": upload}}))
            .await;
    assert_eq!(status, 202);
    assert_eq!(
        submit(json!({"kind": "copywriting", "prompt": "p"}))
            .await
            .0,
        202
    );
    assert!(
        app.metrics(None)
            .await
            .contains("conveyor_ai_shed_total{kind=\"image\"}")
    );
    // The pipeline catches up: images are taken again.
    app.start_consumers();
    wait_until(Duration::from_secs(30), "images taken again", || async {
        submit(image.clone()).await.0 == 202
    })
    .await;
    done(env, app).await;
}
