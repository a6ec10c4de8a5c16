//! Jobs parked past their provider's expected time: on /ops, in the metrics, and the parked_overdue alert until they are gone.

use std::time::Duration;

use super::{Parked, parked_app, submit_video, watch};
use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(jobs_parked_past_their_expected_time_show_on_ops_and_raise_an_alert,);

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
    // The board's snapshot is published after its round's alerts are written.
    let waiting = || async {
        let board = app.get_json(&admin, "/v1/admin/ops").await;
        board["panels"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["tables"].as_array().unwrap())
            .find(|t| t["title"].as_str().unwrap().starts_with("Waiting"))
            .cloned()
            .unwrap()
    };
    wait_until(
        Duration::from_secs(5),
        "the board's next snapshot",
        || async { waiting().await["rows"][0][4] == 1 },
    )
    .await;
    let table = waiting().await;
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
