//! Ending a parked job: a cancel (at the provider, with the policy's refund) and a deadline (the job canceled, the task failed, refunded).

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;

use super::{Parked, VIDEO_COST, parked_app, submit, watch};
use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(a_cancel_while_parked_cancels_at_the_provider_and_a_deadline_fails_with_a_refund,);

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
    // A canceled task stays canceled whatever checks were still on their way: read once
    // every one of them came and was settled.
    app.drain_key("ai.check").await;
    for id in &videos {
        assert_eq!(tasks::task(&app, &key, id).await["status"], "CANCELED");
    }
    done(env, app).await;
}
