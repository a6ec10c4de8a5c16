//! Callbacks: one finishes a job before its next poll; repeated, late, forged, unsigned or misaddressed ones change nothing.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Parked, VIDEO_COST, parked_app, submit_video, watch};
use crate::helpers::*;
use crate::on_every_backend;
use crate::providers::fake_prediction::{self, CALLBACK_BASE};

on_every_backend!(a_callback_finishes_a_job_before_its_next_poll_and_repeats_change_nothing,);

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
    // A woken check is published before the callback is answered: read once the check
    // queue has handled all it was given (the job's next poll waits out its minute).
    drain_ready(&app.platform, app.queue_spec("ai.check")).await;
    assert_eq!(fake.gets.load(Ordering::SeqCst), gets, "nothing was woken");
    assert_eq!(tasks::task(&app, &key, &id2).await["status"], "WAITING");
    done(env, app).await;
}
