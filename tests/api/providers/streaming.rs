//! Streamed copywriting end to end, with the OpenAI-compatible fake emitting a token
//! every 20 ms: the subscriber gets the pieces live, in order, and their join is the
//! task's text; resuming after a disconnect from a sequence number gives the rest with
//! no gap and no duplicate; a stream cut halfway is retried after a `reset` event, so
//! the client's text is the retry's only; cancelling drops the provider's stream.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::fake_openai::{self, tokens_for};
use crate::helpers::*;
use crate::live::{connect, next, send};
use crate::on_every_backend;

on_every_backend!(
    a_streamed_task_reaches_its_subscriber_piece_by_piece_and_resumes_without_loss,
    a_cut_stream_is_retried_after_a_reset_and_cancel_drops_the_stream,
);

async fn streaming_app(
    backend: Backend,
    test: &str,
) -> Option<(TestEnv, TestApp, std::sync::Arc<fake_openai::Fake>)> {
    let mut env = TestEnv::new(backend, test).await?;
    let (url, fake) = fake_openai::start(20).await;
    let ai = env.settings.sections.get_mut("ai").unwrap();
    ai["providers"]["openai"]["base_url"] = json!(url);
    ai["providers"]["openai"]["api_key"] = json!("sk-test");
    ai["providers"]["openai"]["stream_idle_ms"] = json!(2000);
    ai["kinds"]["copywriting"]["provider"] = json!("openai");
    let app = spawn_app(&env).await;
    app.start_consumers();
    Some((env, app, fake))
}

/// The frames of `task` on a new socket from `after_seq` (or the snapshot), until its
/// subscription ends.
async fn frames(app: &TestApp, key: &str, task: &str, after_seq: Option<i64>) -> Vec<Value> {
    let mut ws = connect(app, key).await;
    let mut sub = json!({ "op": "subscribe", "task_id": task });
    if let Some(s) = after_seq {
        sub["after_seq"] = json!(s);
    }
    send(&mut ws, sub).await;
    let mut out = Vec::new();
    loop {
        let f = next(&mut ws).await;
        match f["type"].as_str() {
            Some("unsubscribed") | Some("closed") => return out,
            Some("error") => panic!("{f}"),
            _ => out.push(f),
        }
    }
}

/// The text a client shows: the deltas joined, a reset clearing what came before.
fn client_text(frames: &[Value]) -> String {
    let mut text = String::new();
    for f in frames {
        match f["kind"].as_str() {
            Some("delta") => text.push_str(f["delta"].as_str().unwrap()),
            Some("reset") => text.clear(),
            _ => {}
        }
    }
    text
}

async fn a_streamed_task_reaches_its_subscriber_piece_by_piece_and_resumes_without_loss(
    backend: Backend,
) {
    let Some((env, app, _fake)) = streaming_app(backend, "streaming_live").await else {
        return;
    };
    let (_, key) = app.user("writer", 100).await;
    let prompt = "spring green tea";
    let id = tasks::submit_id(&app, &key, json!({"kind": "copywriting", "prompt": prompt})).await;
    let live = frames(&app, &key, &id, None).await;
    let deltas: Vec<&Value> = live.iter().filter(|f| f["kind"] == "delta").collect();
    assert!(deltas.len() >= 2, "the text arrived in pieces: {live:?}");
    let seqs: Vec<i64> = live.iter().filter_map(|f| f["seq"].as_i64()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "in order, no repeats: {seqs:?}"
    );
    let expected = tokens_for(prompt).concat();
    assert_eq!(client_text(&live), expected);
    assert_eq!(
        live.last().unwrap()["status"],
        "SUCCESS",
        "the deltas came before the end"
    );
    let task = tasks::task(&app, &key, &id).await;
    assert_eq!(
        task["result"]["text"], expected,
        "the task's text is the streamed text"
    );
    assert_eq!(
        task["result"]["usage"]["completion_tokens"],
        tokens_for(prompt).len()
    );

    // A client that saw only the first piece resumes from its sequence number: the rest,
    // nothing twice.
    let first = deltas[0];
    let rest = frames(&app, &key, &id, first["seq"].as_i64()).await;
    let mut resumed = vec![first.clone()];
    resumed.extend(rest);
    assert_eq!(client_text(&resumed), expected);

    // The streamed text is trimmed after its retention; progress and status stay.
    use conveyor::domains::ai_tasks::entity::event;
    use sea_orm::{ColumnTrait as _, EntityTrait as _, QueryFilter as _};
    let db = &app.platform.db;
    let of_task = || event::Entity::find().filter(event::Column::TaskId.eq(id.as_str()));
    let before = of_task().all(db).await.unwrap();
    let text_events = before.iter().filter(|e| e.kind == "delta").count();
    event::Entity::update_many()
        .col_expr(
            event::Column::CreatedAt,
            sea_orm::sea_query::Expr::value(chrono::Utc::now() - chrono::Duration::days(8)),
        )
        .filter(event::Column::TaskId.eq(id.as_str()))
        .exec(db)
        .await
        .unwrap();
    let rules = conveyor::app::retention(&env.settings, conveyor::domains::ALL);
    let trimmed = conveyor::housekeeping::once(db, &rules).await.unwrap();
    assert_eq!(
        trimmed.get("task_events (streamed text)"),
        Some(&(text_events as u64)),
        "{trimmed:?}"
    );
    let after = of_task().all(db).await.unwrap();
    assert_eq!(after.len(), before.len() - text_events);
    assert!(after.iter().all(|e| e.kind == "progress"));
    done(env, app).await;
}

async fn a_cut_stream_is_retried_after_a_reset_and_cancel_drops_the_stream(backend: Backend) {
    let Some((env, app, fake)) = streaming_app(backend, "streaming_reset").await else {
        return;
    };
    let (_, key) = app.user("writer", 100).await;
    let prompt = "cut-once autumn sale";
    let id = tasks::submit_id(&app, &key, json!({"kind": "copywriting", "prompt": prompt})).await;
    tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    let all = frames(&app, &key, &id, Some(0)).await;
    let reset_at = all
        .iter()
        .position(|f| f["kind"] == "reset")
        .unwrap_or_else(|| panic!("a reset: {all:?}"));
    let before: String = all[..reset_at]
        .iter()
        .filter_map(|f| f["delta"].as_str())
        .collect();
    assert!(
        !before.is_empty(),
        "the cut attempt had streamed something: {all:?}"
    );
    let expected = tokens_for(prompt).concat();
    assert_eq!(client_text(&all), expected, "the retry's text only");
    let task = tasks::task(&app, &key, &id).await;
    assert_eq!(task["result"]["text"], expected);
    assert_eq!(task["attempts"], 2, "{task}");

    // Cancel mid-stream: the provider's stream is dropped within a second.
    let id = tasks::submit_id(&app, &key, json!({"kind": "copywriting", "prompt": "slow"})).await;
    wait_until(Duration::from_secs(20), "the first piece", || async {
        frames_so_far(&app, &key, &id)
            .await
            .iter()
            .any(|f| f["kind"] == "delta")
    })
    .await;
    let dropped = fake.dropped.load(Ordering::SeqCst);
    let r = app
        .client
        .post(app.url(&format!("/v1/tasks/{id}/cancel")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let cancelled = Instant::now();
    wait_until(
        Duration::from_secs(5),
        "the provider's stream dropped",
        || async { fake.dropped.load(Ordering::SeqCst) > dropped },
    )
    .await;
    assert!(
        cancelled.elapsed() < Duration::from_secs(1),
        "{:?}",
        cancelled.elapsed()
    );
    done(env, app).await;
}

/// The stored frames of `task` so far (a subscription from sequence 0, read briefly).
async fn frames_so_far(app: &TestApp, key: &str, task: &str) -> Vec<Value> {
    let mut ws = connect(app, key).await;
    send(
        &mut ws,
        json!({ "op": "subscribe", "task_id": task, "after_seq": 0 }),
    )
    .await;
    let mut out = Vec::new();
    while let Ok(f) = tokio::time::timeout(Duration::from_millis(200), next(&mut ws)).await {
        if f["type"] != "event" {
            break;
        }
        out.push(f);
    }
    out
}
