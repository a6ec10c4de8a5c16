//! /demo, built on the TypeScript client, in a real browser behind a TCP proxy: a task
//! submitted from the page is watched while every connection between browser and server
//! is cut twice mid-task. The page shows every stored event once and in order (compared
//! with the server's list), the two resumes, and the final result.

use std::time::Duration;

use fantoccini::Locator;

use super::{attr, browser, console_errors, driver, shot, shots, text, wait_attr, wait_text};
use crate::helpers::{Backend, Proxy, TestEnv, done, spawn_app};

const DIR: &str = "demo";

fn seqs(v: &str) -> Vec<i64> {
    v.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_watches_a_task_through_two_dropped_connections() {
    let Some(chromium) = super::chromium_here() else {
        return;
    };
    let Some(mut env) = TestEnv::new(Backend::RabbitPostgres, "demo_browser").await else {
        return;
    };
    // Steps long enough for two cuts mid-task however slow a loaded machine reconnects
    // (an image: two steps of five progress events).
    *env.settings
        .sections
        .get_mut("ai")
        .and_then(|ai| ai.pointer_mut("/kinds/image/simulated_step_ms"))
        .expect("ai.kinds.image") = serde_json::json!(4000);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("ada", 1000).await;
    // The browser reaches the server only through the proxy, which the test cuts.
    let target: &'static str = Box::leak(app.addr.to_string().into_boxed_str());
    let proxy = Proxy::start(target).await;
    let d = driver(&chromium).await;
    let c = browser(&d).await;
    c.goto(&format!("http://127.0.0.1:{}/demo", proxy.port))
        .await
        .unwrap();
    c.find(Locator::Css("#key"))
        .await
        .unwrap()
        .send_keys(&key)
        .await
        .unwrap();
    c.find(Locator::Css("#kind option:nth-child(2)"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.find(Locator::Css("#submit"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let card = c
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("#tasks .task"))
        .await
        .unwrap();
    let id = card
        .attr("id")
        .await
        .unwrap()
        .unwrap()
        .trim_start_matches("t-")
        .to_owned();
    let css = format!("#t-{id}");

    // Two cuts, each after the page has shown more events; the proxy refuses new
    // connections for a moment, so the first reconnect may fail and back off.
    let mut shown = 0;
    for cut in 1..=2 {
        let before = wait_attr(&c, &css, "data-seqs", "events before the cut", |v| {
            seqs(v).len() > shown
        })
        .await;
        shown = seqs(&before).len();
        let status = text(&c, &format!("{css} .st")).await;
        assert!(
            status == "PENDING" || status == "PROCESSING",
            "cut {cut} comes mid-task, not after it ({status}): the steps are too short"
        );
        proxy.down();
        // Down until the page saw the cut (its log says it reconnects).
        wait_text(&c, "#log", "the page to see the cut", |t| {
            t.starts_with("connection lost")
        })
        .await;
        proxy.up();
        wait_attr(&c, &css, "data-resumes", "the page to resume", |v| {
            v == cut.to_string()
        })
        .await;
        shot(&c, DIR, &format!("{cut}-resumed.png")).await;
    }
    wait_attr(&c, &css, "data-done", "the task to end on the page", |v| {
        v == "1"
    })
    .await;
    shot(&c, DIR, "3-done.png").await;
    assert_eq!(text(&c, &format!("{css} .st")).await, "SUCCESS");
    assert!(
        text(&c, &format!("{css} .res")).await.contains("url")
            || c.find(Locator::Css(&format!("{css} .res img")))
                .await
                .is_ok(),
        "the result is shown"
    );

    // Every stored event after the snapshot, once, in order: the server's list.
    let snapshot: i64 = attr(&c, &css, "data-snapshot").await.parse().unwrap();
    let shown = seqs(&attr(&c, &css, "data-seqs").await);
    let stored: Vec<i64> =
        conveyor::domains::ai_tasks::store::events_after(&app.platform.db, &id, snapshot as i32)
            .await
            .unwrap()
            .iter()
            .map(|e| i64::from(e.seq))
            .collect();
    assert!(stored.len() >= 4, "a task with events to miss: {stored:?}");
    assert_eq!(
        shown, stored,
        "the page showed each stored event once, in order"
    );

    // The page threw nothing (refused connections while cut are network errors, not bugs).
    let errors: Vec<_> = console_errors(&c, &d)
        .await
        .into_iter()
        .filter(|e| {
            !e["message"]
                .as_str()
                .unwrap_or_default()
                .contains("net::ERR_")
                && !e["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("WebSocket connection to")
        })
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    eprintln!(
        "demo: {} events shown through two cuts; screenshots in {}",
        shown.len(),
        shots(DIR).display()
    );
    c.close().await.unwrap();
    drop(proxy);
    done(env, app).await;
}
