//! A parked video polled on its backoff, its progress shown, its output stored; a lost check found by the sweep.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Parked, VIDEO_COST, parked_app, submit_video, watch};
use crate::helpers::*;
use crate::on_every_backend;
use crate::providers::fake_prediction::{self};

on_every_backend!(
    a_parked_video_is_polled_on_its_backoff_and_finishes_with_its_output_stored,
    a_parked_job_whose_check_was_lost_is_found_by_the_sweep,
);

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
    // Its check is held in its delay (an hour), not on its way: none can have come.
    let checks = app.queue_spec("ai.check");
    wait_until(
        Duration::from_secs(10),
        "the check held in its delay",
        || async { waiting_in(&app.platform, checks).await == (0, 1) },
    )
    .await;
    assert_eq!(fake.gets.load(Ordering::SeqCst), 0, "no check came");
    // Its job ends at the provider (200 ms): the check the sweep sends finds it done.
    wait_until(Duration::from_secs(10), "the job to end", || {
        std::future::ready(fake.all_ended())
    })
    .await;
    // The wait says its check is long overdue (the message was lost a while ago).
    use conveyor::domains::ai_tasks::entity::wait;
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
