//! Parked provider jobs end to end, against the prediction-API fake (Replicate's
//! contract): a video task parks (WAITING, no worker held) and is polled on its
//! backoff, shows the provider's progress and finishes with its output stored; a
//! callback finishes it before the next poll, and repeated, late or forged callbacks
//! change nothing; a cancel while parked cancels at the provider and refunds per policy;
//! a parked job whose check message is lost is found by the sweep; a deadline enforced
//! on the wait cancels the provider's job and fails the task with its refund.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use conveyor::broker::settings::QueueOverride;
use serde_json::{Value, json};

use super::fake_prediction::{self, CALLBACK_BASE, Fake};
use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(
    a_parked_video_is_polled_on_its_backoff_and_finishes_with_its_output_stored,
    a_callback_finishes_a_job_before_its_next_poll_and_repeats_change_nothing,
    a_cancel_while_parked_cancels_at_the_provider_and_a_deadline_fails_with_a_refund,
    a_parked_job_whose_check_was_lost_is_found_by_the_sweep,
    jobs_parked_past_their_expected_time_show_on_ops_and_raise_an_alert,
    an_api_of_another_shape_plugs_in_by_configuration,
);

const VIDEO_COST: i64 = 20;

struct Parked {
    env: TestEnv,
    app: TestApp,
    fake: Arc<Fake>,
}

/// An app whose video and model3d kinds are served by the fake (model3d with a deadline
/// of `deadline_secs`), its checks after `delays_ms`; with `callbacks`, jobs are given
/// callback URLs (signed with `secret` when set).
async fn parked_app(
    backend: Backend,
    test: &str,
    delays_ms: [u64; 5],
    callbacks: bool,
    secret: Option<&str>,
    deadline_secs: u64,
) -> Option<Parked> {
    let mut env = TestEnv::new(backend, test).await?;
    let (url, fake) = fake_prediction::start().await;
    let ai = env.settings.sections.get_mut("ai").unwrap();
    ai["providers"]["replicate"] = json!({
        "protocol": "replicate",
        "base_url": url,
        "api_key": "r8-test",
        "model": "5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa",
        "inputs": { "prompt": "prompt", "num_frames": "params.frames" },
        "webhook_secret": secret.unwrap_or(""),
        "expected_secs": 1,
    });
    ai["kinds"]["video"]["provider"] = json!("replicate");
    // 3D renders run for hours: a deadline the broker would refuse on a worker.
    ai["kinds"]["model3d"]["provider"] = json!("replicate");
    ai["kinds"]["model3d"]["deadline_secs"] = json!(deadline_secs);
    if callbacks {
        ai["callback_base_url"] = json!(CALLBACK_BASE);
    }
    for (i, ms) in delays_ms.iter().enumerate() {
        env.settings.queues.insert(
            format!("ai.check.{}", i + 1),
            QueueOverride {
                delay_ms: Some(*ms),
                ..Default::default()
            },
        );
    }
    env.settings.ops.sample_interval_ms = 200;
    *fake.secret.lock().unwrap() = secret.map(str::to_owned);
    let app = spawn_app(&env).await;
    *fake.app.lock().unwrap() = Some(app.url(""));
    app.start_consumers();
    Some(Parked { env, app, fake })
}

async fn submit_video(app: &TestApp, key: &str, prompt: &str) -> String {
    submit(app, key, "video", prompt).await
}

async fn submit(app: &TestApp, key: &str, kind: &str, prompt: &str) -> String {
    tasks::submit_id(
        app,
        key,
        json!({"kind": kind, "prompt": prompt, "params": {"frames": 81}}),
    )
    .await
}

/// Polls the task until `done` holds; every status and progress seen on the way.
async fn watch(
    app: &TestApp,
    key: &str,
    id: &str,
    done: impl Fn(&Value) -> bool,
) -> (Value, Vec<(String, i64)>) {
    let start = Instant::now();
    let mut seen = Vec::new();
    loop {
        let t = tasks::task(app, key, id).await;
        let now = (
            t["status"].as_str().unwrap().to_owned(),
            t["progress"].as_i64().unwrap(),
        );
        if seen.last() != Some(&now) {
            seen.push(now);
        }
        if done(&t) {
            return (t, seen);
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "task {id}: {t}\nseen {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn a_parked_video_is_polled_on_its_backoff_and_finishes_with_its_output_stored(
    backend: Backend,
) {
    let Some(Parked { env, app, fake }) = parked_app(
        backend,
        "parked_poll",
        [200, 400, 800, 1600, 1600],
        false,
        None,
        900,
    )
    .await
    else {
        return;
    };
    let (_, key) = app.user("director", 100).await;
    let started = Instant::now();
    let id = submit_video(&app, &key, "a teapot orbiting the moon ms=2500").await;
    let (task, seen) = watch(&app, &key, &id, |t| t["status"] == "SUCCESS").await;
    let took = started.elapsed();
    assert!(
        seen.iter().any(|(s, _)| s == "WAITING"),
        "it waited at the provider: {seen:?}"
    );
    assert!(
        seen.iter()
            .any(|(s, p)| s == "WAITING" && *p > 0 && *p < 100),
        "the provider's progress bar came through: {seen:?}"
    );
    // Checks at about 0.2, 0.6, 1.4 and 3.0 s: the fourth finds it done.
    let gets = fake.gets.load(Ordering::SeqCst);
    assert!((3..=5).contains(&gets), "{gets} polls");
    assert!(took >= Duration::from_millis(2500), "{took:?}");
    assert_eq!(fake.creates.load(Ordering::SeqCst), 1);
    // The job was given the task's inputs, mapped as configured; no callback URL.
    {
        let jobs = fake.jobs.lock().unwrap();
        let job = jobs.values().next().unwrap();
        assert_eq!(job.input["prompt"], "a teapot orbiting the moon ms=2500");
        assert_eq!(job.input["num_frames"], 81);
        assert!(job.webhook.is_none());
    }
    // The output is ours now, whole.
    let file = &task["result"]["files"][0];
    assert_eq!(file["content_type"], "video/mp4", "{task}");
    let stored = conveyor::storage::Key::parse(file["key"].as_str().unwrap()).unwrap();
    assert_eq!(
        app.platform.storage.head(&stored).await.unwrap().size,
        fake_prediction::mp4_bytes().len() as u64
    );
    assert_eq!(task["result"]["provider"], "replicate");
    assert_eq!(
        app.get_json(&key, "/v1/me").await["credits"],
        100 - VIDEO_COST
    );
    // The provider's run time is recorded as media time.
    let usage = app.get_json(&key, "/v1/me/usage").await;
    assert_eq!(usage["items"][0]["media_seconds"], 2.5, "{usage}");
    done(env, app).await;
}

async fn a_callback_finishes_a_job_before_its_next_poll_and_repeats_change_nothing(
    backend: Backend,
) {
    let secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
    // The first poll would come after a minute: only the callback can end it sooner.
    let Some(Parked { env, app, fake }) = parked_app(
        backend,
        "parked_callback",
        [60_000; 5],
        true,
        Some(secret),
        900,
    )
    .await
    else {
        return;
    };
    let (_, key) = app.user("director", 100).await;
    let started = Instant::now();
    // `twice`: the provider sends its webhook twice at once.
    let id = submit_video(&app, &key, "a kite twice ms=800").await;
    let (task, _) = watch(&app, &key, &id, |t| t["status"] == "SUCCESS").await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(task["result"]["files"][0]["content_type"], "video/mp4");
    // Both callbacks were taken, one check did the work, and it was charged once.
    wait_until(Duration::from_secs(5), "both webhooks answered", || async {
        fake.webhook_answers.lock().unwrap().len() == 2
    })
    .await;
    let answers = fake.webhook_answers.lock().unwrap().clone();
    assert!(
        answers.iter().all(|c| *c == 202 || *c == 404),
        "{answers:?}"
    );
    assert!(answers.contains(&202), "{answers:?}");
    assert_eq!(
        app.get_json(&key, "/v1/me").await["credits"],
        100 - VIDEO_COST
    );
    let (hook, job_id) = {
        let jobs = fake.jobs.lock().unwrap();
        let job = jobs.values().next().unwrap();
        (job.webhook.clone().unwrap(), job.id.clone())
    };
    assert!(
        hook.starts_with(&format!(
            "{CALLBACK_BASE}/v1/callbacks/providers/replicate/{id}."
        )),
        "{hook}"
    );
    // A late one (the job is done and its wait gone) finds nothing and changes nothing.
    let base = hook.split("/v1/callbacks").next().unwrap().to_owned();
    assert_eq!(
        fake_prediction::send_webhook(&fake, &base, &hook, &job_id).await,
        404
    );
    assert_eq!(tasks::task(&app, &key, &id).await["status"], "SUCCESS");

    // While a job waits: a forged token is 404, a bad signature 401, and neither wakes
    // a check (the provider is not asked).
    let id2 = submit_video(&app, &key, "a slow kite hold").await;
    watch(&app, &key, &id2, |t| t["status"] == "WAITING").await;
    let gets = fake.gets.load(Ordering::SeqCst);
    let forged = app
        .client
        .post(app.url(&format!(
            "/v1/callbacks/providers/replicate/{id2}.00112233445566778899aabbccddeeff"
        )))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 404);
    let body: Value = forged.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found", "{body}");
    let hook2 = {
        let jobs = fake.jobs.lock().unwrap();
        jobs.values()
            .find(|j| j.webhook.as_deref().is_some_and(|w| w.contains(&id2)))
            .unwrap()
            .webhook
            .clone()
            .unwrap()
    };
    let unsigned = app
        .client
        .post(hook2.replace(CALLBACK_BASE, &app.url("")))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 401);
    let wrong_provider = app
        .client
        .post(
            hook2
                .replace(CALLBACK_BASE, &app.url(""))
                .replace("/replicate/", "/openai/"),
        )
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_provider.status(), 404);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(fake.gets.load(Ordering::SeqCst), gets, "nothing was woken");
    assert_eq!(tasks::task(&app, &key, &id2).await["status"], "WAITING");
    done(env, app).await;
}

async fn a_cancel_while_parked_cancels_at_the_provider_and_a_deadline_fails_with_a_refund(
    backend: Backend,
) {
    let Some(Parked { env, app, fake }) = parked_app(
        backend,
        "parked_cancel",
        [300, 300, 300, 300, 300],
        false,
        None,
        3,
    )
    .await
    else {
        return;
    };
    let (_, key) = app.user("director", 1000).await;
    // More jobs than the long queue's prefetch (4): each parks and gives its slot back.
    let jobs = [("video", 4), ("model3d", 3)];
    let ids: Vec<(String, String)> = futures::future::join_all(
        jobs.iter()
            .flat_map(|(kind, n)| (0..*n).map(move |i| (*kind, i)))
            .map(|(kind, i)| {
                let (app, key) = (&app, &key);
                async move {
                    let id = submit(app, key, kind, &format!("a long shot {i} hold")).await;
                    (kind.to_owned(), id)
                }
            }),
    )
    .await;
    for (_, id) in &ids {
        let (t, _) = watch(&app, &key, id, |t| t["status"] == "WAITING").await;
        assert!(t["waiting"]["provider"] == "replicate", "{t}");
    }
    assert_eq!(fake.creates.load(Ordering::SeqCst), 7);
    let videos: Vec<&String> = ids
        .iter()
        .filter(|(k, _)| k == "video")
        .map(|(_, id)| id)
        .collect();
    let models: Vec<&String> = ids
        .iter()
        .filter(|(k, _)| k == "model3d")
        .map(|(_, id)| id)
        .collect();
    let credits = || async {
        app.get_json(&key, "/v1/me").await["credits"]
            .as_i64()
            .unwrap()
    };
    // A cancel ends the task at once, asks the provider to stop, and refunds per policy
    // (ai.cancel_refund_started_percent of a running step).
    let percent =
        app.platform.settings.section::<Value>("ai").unwrap()["cancel_refund_started_percent"]
            .as_i64()
            .unwrap();
    let before = credits().await;
    let cancel = |id: &String| {
        let req = app
            .client
            .post(app.url(&format!("/v1/tasks/{id}/cancel")))
            .bearer_auth(&key);
        async move { req.send().await.unwrap() }
    };
    let r = cancel(videos[0]).await;
    assert_eq!(r.status(), 200);
    let canceled: Value = r.json().await.unwrap();
    assert_eq!(canceled["status"], "CANCELED");
    wait_until(Duration::from_secs(10), "the provider's cancel", || async {
        fake.cancels.load(Ordering::SeqCst) >= 1
    })
    .await;
    assert_eq!(credits().await, before + VIDEO_COST * percent / 100);
    // The 3D renders' deadline (3 s) is enforced on their waits: each job is canceled at
    // the provider and its task failed with everything back.
    let model_cost =
        app.platform.settings.section::<Value>("ai").unwrap()["kinds"]["model3d"]["cost"]
            .as_i64()
            .unwrap();
    for id in &models {
        let (t, _) = watch(&app, &key, id, |t| t["status"] == "FAILED").await;
        assert!(
            t["error"]
                .as_str()
                .unwrap()
                .starts_with("deadline_exceeded"),
            "{t}"
        );
    }
    wait_until(Duration::from_secs(10), "every render canceled", || async {
        fake.cancels.load(Ordering::SeqCst) >= 4
    })
    .await;
    assert_eq!(
        credits().await,
        before + VIDEO_COST * percent / 100 + 3 * model_cost
    );
    // The videos' 900 s deadline is far: they still wait, until canceled.
    for id in &videos[1..] {
        assert_eq!(tasks::task(&app, &key, id).await["status"], "WAITING");
        assert_eq!(cancel(id).await.status(), 200);
    }
    wait_until(Duration::from_secs(10), "every job canceled", || async {
        fake.cancels.load(Ordering::SeqCst) >= 7
    })
    .await;
    // A canceled task stays canceled whatever checks were still on their way.
    tokio::time::sleep(Duration::from_millis(700)).await;
    for id in &videos {
        assert_eq!(tasks::task(&app, &key, id).await["status"], "CANCELED");
    }
    done(env, app).await;
}

async fn a_parked_job_whose_check_was_lost_is_found_by_the_sweep(backend: Backend) {
    // The first check waits an hour: as good as lost for this test.
    let Some(Parked { env, app, fake }) =
        parked_app(backend, "parked_sweep", [3_600_000; 5], false, None, 900).await
    else {
        return;
    };
    let (_, key) = app.user("director", 100).await;
    let id = submit_video(&app, &key, "a lighthouse ms=200").await;
    watch(&app, &key, &id, |t| t["status"] == "WAITING").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(fake.gets.load(Ordering::SeqCst), 0, "no check came");
    // The wait says its check is long overdue (the message was lost a while ago).
    use conveyor::domains::ai_tasks::parked::entity as wait;
    use sea_orm::{ColumnTrait as _, EntityTrait as _, QueryFilter as _};
    let past = chrono::Utc::now() - chrono::Duration::seconds(60);
    let moved = wait::Entity::update_many()
        .col_expr(wait::Column::CheckAt, sea_orm::sea_query::Expr::value(past))
        .filter(wait::Column::TaskId.eq(id.clone()))
        .exec(&app.platform.db)
        .await
        .unwrap();
    assert_eq!(moved.rows_affected, 1);
    let (task, _) = watch(&app, &key, &id, |t| t["status"] == "SUCCESS").await;
    assert_eq!(task["result"]["files"][0]["content_type"], "video/mp4");
    assert_eq!(
        fake.gets.load(Ordering::SeqCst),
        1,
        "the sweep's one check found it done"
    );
    done(env, app).await;
}

async fn jobs_parked_past_their_expected_time_show_on_ops_and_raise_an_alert(backend: Backend) {
    // Jobs of this provider usually end within a second.
    let Some(Parked { env, app, .. }) = parked_app(
        backend,
        "parked_ops",
        [300, 300, 300, 300, 300],
        false,
        None,
        900,
    )
    .await
    else {
        return;
    };
    let admin = app.admin().await;
    let (_, key) = app.user("director", 100).await;
    let id = submit_video(&app, &key, "an endless take hold").await;
    watch(&app, &key, &id, |t| t["status"] == "WAITING").await;
    let alerts = || async {
        app.get_json(&admin, "/v1/admin/alerts").await["active"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["rule"] == "parked_overdue" && a["queue"] == "replicate")
            .count()
    };
    wait_until(
        Duration::from_secs(20),
        "the parked_overdue alert",
        || async { alerts().await == 1 },
    )
    .await;
    let board = app.get_json(&admin, "/v1/admin/ops").await;
    let table = board["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["tables"].as_array().unwrap())
        .find(|t| t["title"].as_str().unwrap().starts_with("Waiting"))
        .cloned()
        .unwrap();
    assert_eq!(table["rows"][0][0], "provider", "{table}");
    assert_eq!(table["rows"][0][1], "replicate");
    assert_eq!(table["rows"][0][2], 1);
    assert_eq!(table["rows"][0][4], 1, "past its expected time: {table}");
    let metrics = app.metrics(None).await;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("conveyor_ai_waiting{")
                && l.contains("provider=\"replicate\"")
                && l.ends_with(" 1")),
        "{metrics}"
    );
    // Once the job is gone, the alert resolves.
    let r = app
        .client
        .post(app.url(&format!("/v1/tasks/{id}/cancel")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    wait_until(Duration::from_secs(20), "the alert resolved", || async {
        alerts().await == 0
    })
    .await;
    done(env, app).await;
}

/// The configuration of docs/providers.md's "Any API of the same shape", as it is written
/// there.
async fn an_api_of_another_shape_plugs_in_by_configuration(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "parked_shape").await else {
        return;
    };
    let (base, studio) = super::fake_studio::start().await;
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
