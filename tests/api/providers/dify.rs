//! The Dify adapter against the fake workflow API: node events become progress with the
//! node's title, text chunks become live deltas whose join is the text, the configured
//! output is the result, inputs are mapped from the task; blocking mode; a failed
//! workflow is permanent. End to end, a Dify-served copywriting task shows its nodes as
//! progress to a subscriber and streams its text.

use std::sync::Arc;

use conveyor::domains::ai_tasks::TaskKind;
use conveyor::providers::dify::Dify;
use conveyor::providers::gate::Gates;
use conveyor::providers::{ExecError, Report};
use conveyor::providers::{Protocol, ProviderSettings};
use serde_json::{Value, json};

use super::fake_dify::{self, NODES, text_for};
use crate::helpers::*;
use crate::live::{connect, next, send};
use crate::on_every_backend;

on_every_backend!(a_dify_task_shows_its_nodes_as_progress_and_streams_its_text);

fn settings(base_url: &str, mode: &str) -> ProviderSettings {
    ProviderSettings {
        protocol: Protocol::Dify,
        base_url: base_url.to_owned(),
        model: String::new(),
        image_model: String::new(),
        audio_model: String::new(),
        embedding_model: String::new(),
        api_key: "app-test".into(),
        timeout_ms: 5000,
        stream_idle_ms: 2000,
        requests_per_second: 100,
        requests_per_minute: 0,
        tokens_per_minute: 0,
        max_retry_wait_ms: 10_000,
        max_concurrent: 0,
        fleet_max_concurrent: 0,
        inputs: [
            ("topic".to_owned(), "prompt".to_owned()),
            ("tone".to_owned(), "params.tone".to_owned()),
        ]
        .into(),
        output: "text".into(),
        response_mode: mode.into(),
        prediction: None,
        webhook_secret: String::new(),
        expected_secs: 1800,
        segment_secs: 600,
        keyframes: 3,
        program: "ffmpeg".into(),
        max_output_mib: 1024,
    }
}

async fn run(exec: &Dify, prompt: &str) -> (Result<Value, ExecError>, Vec<Report>) {
    super::run_job(
        exec,
        TaskKind::Copywriting,
        prompt,
        json!({ "tone": "playful" }),
    )
    .await
}

fn gate() -> conveyor::providers::gate::Gate {
    Arc::new(Gates::local()).gate("dify", 0, 0)
}

#[tokio::test]
async fn a_streamed_workflow_reports_nodes_and_text_and_a_failed_one_is_permanent() {
    let url = fake_dify::start().await;
    let exec = Dify::new(&settings(&url, "streaming"), gate()).unwrap();
    let (out, reports) = run(&exec, "green tea").await;
    let out = out.unwrap();
    assert_eq!(out["text"], text_for("green tea"));
    assert_eq!(
        out["outputs"]["echo"],
        json!({ "topic": "green tea", "tone": "playful" }),
        "inputs mapped from the task"
    );
    assert_eq!(out["usage"]["total_tokens"], 42);
    let pieces: String = reports
        .iter()
        .filter_map(|r| match r {
            Report::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(pieces, text_for("green tea"));
    let messages: Vec<String> = reports
        .iter()
        .filter_map(|r| match r {
            Report::Progress(_, Some(m)) => Some(m.clone()),
            _ => None,
        })
        .collect();
    for node in NODES {
        assert!(
            messages.contains(&node.to_owned()),
            "{node} started: {messages:?}"
        );
        assert!(
            messages.contains(&format!("{node} done")),
            "{node} finished: {messages:?}"
        );
    }
    let (failed, _) = run(&exec, "fail").await;
    assert!(
        matches!(failed, Err(ExecError::Permanent(ref m)) if m.contains("failed")),
        "{failed:?}"
    );

    let blocking = Dify::new(&settings(&url, "blocking"), gate()).unwrap();
    let (out, _) = run(&blocking, "oolong").await;
    assert_eq!(out.unwrap()["text"], text_for("oolong"));
    let mut wrong = settings(&url, "streaming");
    wrong.api_key = "app-wrong".into();
    let (out, _) = run(&Dify::new(&wrong, gate()).unwrap(), "x").await;
    assert!(
        matches!(out, Err(ExecError::Permanent(ref m)) if m.contains("401")),
        "{out:?}"
    );
}

async fn a_dify_task_shows_its_nodes_as_progress_and_streams_its_text(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "dify_task").await else {
        return;
    };
    let url = fake_dify::start().await;
    let ai = env.settings.sections.get_mut("ai").unwrap();
    ai["providers"]["workflow"] = json!({
        "protocol": "dify", "base_url": url, "api_key": "app-test",
        "inputs": { "topic": "prompt" }, "output": "text"
    });
    ai["kinds"]["copywriting"]["provider"] = json!("workflow");
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (_, key) = app.user("flow", 100).await;
    let id = tasks::submit_id(
        &app,
        &key,
        json!({"kind": "copywriting", "prompt": "jasmine"}),
    )
    .await;
    let mut ws = connect(&app, &key).await;
    send(&mut ws, json!({ "op": "subscribe", "task_id": id })).await;
    let (mut text, mut messages) = (String::new(), Vec::new());
    loop {
        let f = next(&mut ws).await;
        if f["type"] != "event" && f["type"] != "snapshot" {
            break;
        }
        if f["kind"] == "delta" {
            text.push_str(f["delta"].as_str().unwrap());
        }
        if let Some(m) = f["message"].as_str() {
            messages.push(m.to_owned());
        }
    }
    assert_eq!(text, text_for("jasmine"));
    assert!(
        messages
            .iter()
            .any(|m| NODES.iter().any(|n| m.starts_with(n))),
        "node progress shown: {messages:?}"
    );
    let task = tasks::task(&app, &key, &id).await;
    assert_eq!(task["status"], "SUCCESS");
    assert_eq!(task["result"]["text"], text_for("jasmine"));
    done(env, app).await;
}
