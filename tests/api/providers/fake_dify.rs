//! A wire-faithful Dify workflow API for the tests, as Dify's reference documents it:
//! `POST /v1/workflows/run` with `inputs`, `response_mode` and `user`. Streaming answers
//! `text/event-stream` of `data: {"event": …, "workflow_run_id", "task_id", "data": {…}}`
//! events: `workflow_started`, per node `node_started` and `node_finished` (with
//! `title`, `index`, `status`), `text_chunk` (`data.text`), a `ping`, and
//! `workflow_finished` (`status`, `outputs`, `error`, `total_tokens`, `elapsed_time`).
//! Blocking answers `{"workflow_run_id", "task_id", "data": {…finished fields}}`.
//! The workflow writes "Copy for: <topic>" where `topic` is its input; topic `fail` makes
//! a node fail (`status: "failed"`).

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

pub const NODES: [&str; 3] = ["Start", "LLM", "End"];

pub fn text_for(topic: &str) -> String {
    format!("Copy for: {topic}, made by a workflow")
}

fn event(name: &str, data: Value) -> String {
    let e = json!({ "event": name, "workflow_run_id": "run-1", "task_id": "dify-task-1", "data": data });
    format!("data: {e}\n\n")
}

fn finished(topic: &str, inputs: &Value) -> Value {
    if topic == "fail" {
        return json!({ "id": "run-1", "status": "failed", "outputs": null, "error": "node LLM failed: content filtered", "total_tokens": 3, "elapsed_time": 0.1 });
    }
    json!({ "id": "run-1", "status": "succeeded", "outputs": { "text": text_for(topic), "echo": inputs }, "error": null, "total_tokens": 42, "elapsed_time": 0.3 })
}

async fn run(headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer app-test") {
        return (StatusCode::UNAUTHORIZED, Json(json!({ "code": "unauthorized", "message": "Access token is invalid", "status": 401 }))).into_response();
    }
    let inputs = body["inputs"].clone();
    let topic = inputs["topic"].as_str().unwrap_or_default().to_owned();
    if body["response_mode"] == "blocking" {
        return Json(json!({ "workflow_run_id": "run-1", "task_id": "dify-task-1", "data": finished(&topic, &inputs) })).into_response();
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<bytes::Bytes, Infallible>>(4);
    tokio::spawn(async move {
        let send = |s: String| tx.send(Ok(bytes::Bytes::from(s)));
        let _ = send(event(
            "workflow_started",
            json!({ "id": "run-1", "workflow_id": "wf-1", "sequence_number": 1 }),
        ))
        .await;
        for (index, title) in NODES.iter().enumerate() {
            let node = json!({ "id": format!("n{index}"), "node_id": format!("n{index}"), "node_type": title.to_lowercase(), "title": title, "index": index + 1 });
            let _ = send(event("node_started", node.clone())).await;
            tokio::time::sleep(Duration::from_millis(30)).await;
            if *title == "LLM" && topic != "fail" {
                for piece in text_for(&topic).split_inclusive(' ') {
                    let _ = send(event(
                        "text_chunk",
                        json!({ "text": piece, "from_variable_selector": ["n1", "text"] }),
                    ))
                    .await;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                let _ = send("event: ping\n\n".into()).await;
            }
            let mut done = node;
            done["status"] = json!(if topic == "fail" && *title == "LLM" {
                "failed"
            } else {
                "succeeded"
            });
            let _ = send(event("node_finished", done)).await;
            if topic == "fail" && *title == "LLM" {
                break;
            }
        }
        let _ = send(event("workflow_finished", finished(&topic, &inputs))).await;
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(super::fake_openai::Receiver(rx)))
        .unwrap()
}

/// Starts the fake; its base URL (`http://…/v1`).
pub async fn start() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route("/v1/workflows/run", post(run));
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("{base}/v1")
}
