//! The ops console: signs in, sees ai.short's depth rise under a burst and fall as
//! consumers drain it, opens a dead letter, replays it by clicking and sees the waiting
//! count go to zero; the browser's console stays free of errors.

use std::time::{Duration, Instant};

use fantoccini::Locator;
use serde_json::{Value, json};

use super::{browser, console_errors, driver, shot, shots, text, wait_text};
use crate::helpers::tasks;
use crate::helpers::{Backend, TestEnv, done, spawn_app};

const DIR: &str = "ops-console";

/// A copywriting task that fails for good (its dead letter is what the page operates).
fn failing(prompt: &str) -> Value {
    json!({ "kind": "copywriting", "prompt": prompt, "params": { "simulate": { "fail_permanent": true } } })
}

fn number(t: &str) -> Option<u64> {
    t.trim().parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_a_burst_draining_and_replays_a_dead_letter_by_click() {
    let Some(chromium) = super::chromium_here() else {
        return;
    };
    // RabbitMQ: the API runs no consumer, so a burst waits until the test starts them.
    let Some(mut env) = TestEnv::new(Backend::RabbitPostgres, "ops_browser").await else {
        return;
    };
    env.settings.ops.sample_interval_ms = 300;
    let app = spawn_app(&env).await;
    let admin = app.admin().await;
    let (_, user) = app.user("alice", 1000).await;
    let d = driver(&chromium).await;
    let c = browser(&d).await;

    // Sign in.
    c.goto(&app.url("/ops")).await.unwrap();
    c.find(Locator::Css("#key"))
        .await
        .unwrap()
        .send_keys(&admin)
        .await
        .unwrap();
    c.find(Locator::Css("#signin-button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let row = r#"#queues tr[data-queue="ai.short"]"#;
    wait_text(&c, &format!("{row} .ready"), "the ai.short row", |t| {
        number(t).is_some()
    })
    .await;
    shot(&c, DIR, "1-signed-in.png").await;

    // A burst, and a task that fails for good (its dead letter is replayed below).
    let ids = tasks::copywriting_burst(&app, &user, 40, "burst").await;
    let doomed = tasks::submit_id(&app, &user, failing("doomed")).await;
    let risen = wait_text(&c, &format!("{row} .ready"), "the burst to show", |t| {
        number(t).is_some_and(|n| n >= 20)
    })
    .await;
    shot(&c, DIR, "2-burst-waiting.png").await;

    // Consumers drain it.
    app.start_consumers();
    for id in &ids {
        tasks::wait_status(&app, &user, id, "SUCCESS").await;
    }
    tasks::wait_status(&app, &user, &doomed, "FAILED").await;
    wait_text(&c, &format!("{row} .ready"), "the queue to drain", |t| {
        number(t) == Some(0)
    })
    .await;
    wait_text(&c, "#dl-waiting", "one dead letter waiting", |t| {
        number(t) == Some(1)
    })
    .await;
    shot(&c, DIR, "3-drained.png").await;

    // Open the dead letter and replay it by clicking.
    c.find(Locator::Css("#dl-apply"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let letter = c
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("#dl-table tr[data-id]"))
        .await
        .unwrap();
    letter.click().await.unwrap();
    wait_text(&c, "#dl-detail", "the letter's body", |t| {
        t.contains(&doomed)
    })
    .await;
    shot(&c, DIR, "4-dead-letter.png").await;
    c.find(Locator::Css("#dl-replay"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(&c, "#dl-waiting", "no dead letter waiting", |t| {
        number(t) == Some(0)
    })
    .await;
    shot(&c, DIR, "5-replayed.png").await;

    // Another one, replayed by filter: counted first (a confirm), then sent at the pace.
    let again = tasks::submit_id(&app, &user, failing("doomed again")).await;
    tasks::wait_status(&app, &user, &again, "FAILED").await;
    wait_text(&c, "#dl-waiting", "the second dead letter", |t| {
        number(t) == Some(1)
    })
    .await;
    c.find(Locator::Css(r#"#dl-queue option[value="ai.short"]"#))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.find(Locator::Css("#dl-replay-filter"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let prompt = loop {
        match c.get_alert_text().await {
            Ok(t) => break t,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => panic!("no confirm: {e}"),
        }
    };
    assert!(
        prompt.contains("Replay 1 dead letter(s) of ai.short"),
        "{prompt}"
    );
    c.accept_alert().await.unwrap();
    wait_text(&c, "#dl-progress", "the filter's progress", |t| {
        t == "replayed 1/1"
    })
    .await;
    wait_text(&c, "#dl-waiting", "no dead letter waiting", |t| {
        number(t) == Some(0)
    })
    .await;

    // Change ai.short's concurrency from its cell: the consumers follow, their reports
    // show it.
    c.find(Locator::Css(&format!("{row} .concurrency")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.send_alert_text("32").await.unwrap();
    c.accept_alert().await.unwrap();
    wait_text(
        &c,
        &format!("{row} .concurrency"),
        "the new concurrency",
        |t| number(t) == Some(32),
    )
    .await;
    shot(&c, DIR, "6-concurrency.png").await;

    // Find a task by its metadata and retry it by clicking.
    let mut lost = failing("lost");
    lost["metadata"] = json!({ "wave": "b1" });
    let lost = tasks::submit_id(&app, &user, lost).await;
    tasks::wait_status(&app, &user, &lost, "FAILED").await;
    c.find(Locator::Css("#tk-meta"))
        .await
        .unwrap()
        .send_keys("wave:b1")
        .await
        .unwrap();
    c.find(Locator::Css("#tk-apply"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(
        &c,
        "#tk-table tbody",
        "the task found by its metadata",
        |t| t.contains(&lost) && t.contains("FAILED"),
    )
    .await;
    c.find(Locator::Css("#tk-retry"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    // The confirmation comes once the dry run has counted.
    let asked = std::time::Instant::now();
    while c.accept_alert().await.is_err() {
        assert!(
            asked.elapsed() < std::time::Duration::from_secs(10),
            "no confirmation: {}",
            text(&c, "#tk-message").await
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    wait_text(&c, "#tk-progress", "the retry", |t| t == "retried 1/1").await;
    wait_text(&c, "#tk-table tbody", "the retry listed beside it", |t| {
        t.matches("wave").count() == 2
    })
    .await;
    shot(&c, DIR, "7-tasks-retried.png").await;

    let errors = console_errors(&c, &d).await;
    assert!(errors.is_empty(), "console errors: {errors:?}");
    eprintln!(
        "ops console: burst peaked at {risen} ready; screenshots in {}",
        shots(DIR).display()
    );
    c.close().await.unwrap();
    done(env, app).await;
}
