//! One trace from the click to the push, read back from a real Jaeger: an API process and
//! a consumer process on RabbitMQ export their spans over OTLP/HTTP, and the trace of a
//! pipeline task (one step failed once and retried) holds the request, every step of
//! both attempts, the provider calls and the live pushes, linked parent to child.

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::jaeger;
use crate::helpers::process::*;
use crate::helpers::{Backend, TestEnv};

/// One span as Jaeger's query API answers it, with its process's role.
#[derive(Debug)]
struct Span {
    id: String,
    name: String,
    parent: Option<String>,
    process: String,
    tags: HashMap<String, Value>,
}

/// The spans of `trace_id` in Jaeger, with the `conveyor.process` of each (empty when
/// Jaeger does not know the trace yet).
async fn spans_of(query: &str, trace_id: &str) -> Vec<Span> {
    let r = reqwest::get(format!("{query}/api/traces/{trace_id}"))
        .await
        .unwrap();
    if r.status() != 200 {
        return Vec::new();
    }
    let body: Value = r.json().await.unwrap();
    let Some(trace) = body["data"].get(0) else {
        return Vec::new();
    };
    assert_eq!(body["data"].as_array().unwrap().len(), 1, "one trace");
    let role = |pid: &str| -> String {
        trace["processes"][pid]["tags"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["key"] == "conveyor.process")
            .and_then(|t| t["value"].as_str())
            .unwrap_or("")
            .to_owned()
    };
    trace["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert_eq!(s["traceID"], trace_id, "every span is of the one trace");
            Span {
                id: s["spanID"].as_str().unwrap().to_owned(),
                name: s["operationName"].as_str().unwrap().to_owned(),
                parent: s["references"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|r| r["refType"] == "CHILD_OF")
                    .map(|r| r["spanID"].as_str().unwrap().to_owned()),
                process: role(s["processID"].as_str().unwrap()),
                tags: s["tags"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|t| (t["key"].as_str().unwrap().to_owned(), t["value"].clone()))
                    .collect(),
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_from_the_request_through_the_retried_steps_to_the_push() {
    let test = "one_trace_from_the_request_to_the_push";
    let Some((otlp, query)) = jaeger(test).await else {
        return;
    };
    let Some(env) = TestEnv::new(Backend::RabbitPostgres, test).await else {
        return;
    };
    let platform = env.platform().await;
    let (_, key) = conveyor::users::create(&platform.db, "tracer", 1000, false)
        .await
        .unwrap();
    let port = free_port();
    let traced = |cmd: &mut std::process::Command| {
        on_services(cmd, &env)
            .env("CONVEYOR__TELEMETRY__OTLP_ENDPOINT", &otlp)
            .env("CONVEYOR__STORAGE__ROOT", &env.settings.storage.root)
            .env(
                "CONVEYOR__STORAGE__URL_SECRET",
                &env.settings.storage.url_secret,
            )
            .env("CONVEYOR__SERVER__PORT", port.to_string())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
    };
    let mut serve = command(BIN, env.dir.path());
    traced(serve.arg("serve"));
    let serve = serve.spawn().map(Running).unwrap();
    let mut consume = command(BIN, env.dir.path());
    traced(consume.args(["consume", "ai"]));
    let consume = consume.spawn().map(Running).unwrap();
    wait_ready(port).await;

    let api = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let video = crate::helpers::videos::video(2, true);
    let form = reqwest::multipart::Form::new()
        .text("purpose", "video")
        .part(
            "file",
            reqwest::multipart::Part::bytes(video)
                .file_name("clip.mp4")
                .mime_str("video/mp4")
                .unwrap(),
        );
    let upload: Value = http
        .post(format!("{api}/v1/uploads"))
        .bearer_auth(&key)
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(upload["status"], "READY", "{upload}");
    // Claims: extraction 1, transcription 2 (fails) and 3, summary 4, entry 5.
    let r = http
        .post(format!("{api}/v1/tasks"))
        .bearer_auth(&key)
        .json(&json!({ "kind": "video_analysis", "prompt": "trace me",
            "params": { "upload_id": upload["id"], "simulate": { "fail_transient_attempts": 2 } } }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let task: Value = r.json().await.unwrap();
    let id = task["id"].as_str().unwrap().to_owned();
    // Someone watching: the API instance pushes the task's events (the push spans).
    let watch = {
        let (http, api, key, id) = (http.clone(), api.clone(), key.clone(), id.clone());
        tokio::spawn(async move {
            let mut r = http
                .get(format!("{api}/v1/tasks/{id}/events"))
                .bearer_auth(&key)
                .send()
                .await
                .unwrap();
            while let Ok(Some(_)) = r.chunk().await {}
        })
    };
    let start = Instant::now();
    let view = loop {
        let v: Value = http
            .get(format!("{api}/v1/tasks/{id}"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if v["status"] == "SUCCESS" {
            break v;
        }
        assert!(
            v["status"] != "FAILED" && start.elapsed() < Duration::from_secs(60),
            "{v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), watch).await;
    let trace_id = view["trace_id"]
        .as_str()
        .unwrap_or_else(|| panic!("the task shows its trace id: {view}"));
    assert_eq!(trace_id.len(), 32, "{view}");

    // Spans arrive in the exporters' batches (half a second) and Jaeger's.
    let wanted = |spans: &[Span]| {
        let steps = spans.iter().filter(|s| s.name.starts_with("step ")).count();
        steps >= 5
            && spans.iter().any(|s| s.name.starts_with("push "))
            && spans.iter().any(|s| s.name.starts_with("POST /v1/tasks"))
    };
    let start = Instant::now();
    let spans = loop {
        let spans = spans_of(&query, trace_id).await;
        if wanted(&spans) || start.elapsed() > Duration::from_secs(20) {
            break spans;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let names: Vec<(&str, &str)> = spans
        .iter()
        .map(|s| (s.name.as_str(), s.process.as_str()))
        .collect();
    let by_id: HashMap<&str, &Span> = spans.iter().map(|s| (s.id.as_str(), s)).collect();
    let parent_of = |s: &Span| s.parent.as_deref().and_then(|p| by_id.get(p)).copied();
    // A step runs under its delivery's consumer span (`process <queue>`, in the consumer
    // process), the child of the span that sent the message: the sender's id.
    let sender_of = |s: &Span| -> Option<String> {
        let delivery = parent_of(s)?;
        assert!(
            delivery.name.starts_with("process ai.") && delivery.process == "consume ai",
            "{} under {}",
            s.name,
            delivery.name
        );
        parent_of(delivery).map(|p| p.id.clone())
    };

    // The request is the root, in the API process.
    let request = spans
        .iter()
        .find(|s| s.name == "POST /v1/tasks")
        .unwrap_or_else(|| panic!("no request span in {names:?}"));
    assert_eq!(request.parent, None, "the request starts the trace");
    assert_eq!(request.process, "serve");
    assert_eq!(request.tags["http.response.status_code"], 202);
    // Spans from both processes.
    let processes: HashSet<&str> = spans.iter().map(|s| s.process.as_str()).collect();
    assert!(
        processes.contains("serve") && processes.contains("consume ai"),
        "{processes:?}"
    );
    // Every step, both attempts of the failed one, in the consumer: the first step was
    // sent by the request, each later one by the step before (the retried attempt's
    // message too: a retry keeps its message's trace).
    let step = |name: &str| -> Vec<&Span> {
        spans
            .iter()
            .filter(|s| s.name == format!("step video_analysis.{name}"))
            .collect()
    };
    let extract = step("extract_audio");
    assert_eq!(extract.len(), 1, "{names:?}");
    assert_eq!(extract[0].process, "consume ai");
    assert_eq!(sender_of(extract[0]).as_deref(), Some(request.id.as_str()));
    let transcribe = step("transcribe");
    assert_eq!(
        transcribe.len(),
        2,
        "the failed attempt and its retry: {names:?}"
    );
    let attempts: HashSet<i64> = transcribe
        .iter()
        .map(|s| s.tags["attempt"].as_i64().unwrap())
        .collect();
    assert_eq!(attempts, HashSet::from([2, 3]));
    for t in &transcribe {
        assert_eq!(sender_of(t).as_deref(), Some(extract[0].id.as_str()));
    }
    let retried = transcribe.iter().find(|s| s.tags["attempt"] == 3).unwrap();
    let summarize = step("summarize");
    assert_eq!(summarize.len(), 1, "{names:?}");
    assert_eq!(
        sender_of(summarize[0]).as_deref(),
        Some(retried.id.as_str())
    );
    assert_eq!(step("build_knowledge_entry").len(), 1, "{names:?}");
    // Provider calls under their steps, with their provider and outcome; the failed
    // attempt's call says so.
    let calls: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("start "))
        .collect();
    assert!(calls.len() >= 5, "a call per step run: {names:?}");
    for c in &calls {
        let parent = parent_of(c).expect("a call has its step");
        assert!(
            parent.name.starts_with("step "),
            "{} under {}",
            c.name,
            parent.name
        );
        assert!(c.tags.contains_key("outcome"), "{:?}", c.tags);
    }
    assert!(
        calls
            .iter()
            .any(|c| c.tags.get("outcome") == Some(&json!("transient"))),
        "the failed call is marked: {calls:?}"
    );
    // Pushes of the task's events happen in the API process, under the step that made
    // them (or the settlement of a failed message: its RETRYING event).
    let pushes: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("push "))
        .collect();
    assert!(!pushes.is_empty(), "{names:?}");
    for p in &pushes {
        assert_eq!(p.process, "serve");
        let parent = parent_of(p).expect("a push has its step");
        assert!(
            parent.name.starts_with("step ") || parent.name.starts_with("process "),
            "push under {}",
            parent.name
        );
        assert_eq!(parent.process, "consume ai");
    }
    // Never the prompt.
    for s in &spans {
        for v in s.tags.values() {
            assert!(!v.to_string().contains("trace me"), "{}: {v}", s.name);
        }
    }
    eprintln!(
        "one trace: {} spans ({} steps, {} provider calls, {} pushes) from {processes:?}",
        spans.len(),
        spans.iter().filter(|s| s.name.starts_with("step ")).count(),
        calls.len(),
        pushes.len()
    );
    drop(consume);
    drop(serve);
    env.cleanup(Some(&platform)).await;
}

/// A caller's `traceparent` at the API: untrusted by default, it neither chooses the
/// task's trace id nor, sampled, forces spans out past `sample_ratio = 0`; with
/// `telemetry.trust_incoming` the request joins the caller's trace and decision. Read back
/// from Jaeger: what was exported, under which trace id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_traceparent_is_followed_only_when_trusted() {
    let test = "trusted_traceparent";
    let Some((otlp, query)) = jaeger(test).await else {
        return;
    };
    let Some(env) = TestEnv::new(Backend::RabbitPostgres, test).await else {
        return;
    };
    let platform = env.platform().await;
    let (_, key) = conveyor::users::create(&platform.db, "caller", 1000, false)
        .await
        .unwrap();
    // A fresh caller trace per run: Jaeger keeps what earlier runs sent.
    let caller = uuid::Uuid::new_v4().simple().to_string();
    let traceparent = format!("00-{caller}-00f067aa0ba902b7-01");
    let exported = |trace_id: String| {
        let query = query.clone();
        async move {
            spans_of(&query, &trace_id)
                .await
                .iter()
                .any(|s| s.name == "POST /v1/tasks")
        }
    };
    // (trust_incoming, sample_ratio), the trusted case first: it shows the spans of a
    // sampled request do reach Jaeger here, so the absence below means something.
    let mut unsampled = None;
    for (trust, ratio) in [(true, "0"), (false, "0"), (false, "1")] {
        let port = free_port();
        let mut serve = command(BIN, env.dir.path());
        on_services(serve.arg("serve"), &env)
            .env("CONVEYOR__TELEMETRY__OTLP_ENDPOINT", &otlp)
            .env("CONVEYOR__TELEMETRY__SAMPLE_RATIO", ratio)
            .env("CONVEYOR__TELEMETRY__TRUST_INCOMING", trust.to_string())
            .env("CONVEYOR__SERVER__PORT", port.to_string())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        let mut serve = serve.spawn().map(Running).unwrap();
        wait_ready(port).await;
        let r = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{port}/v1/tasks"))
            .bearer_auth(&key)
            .header("traceparent", &traceparent)
            .json(&json!({ "kind": "copywriting", "prompt": "whose trace?" }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
        let task: Value = r.json().await.unwrap();
        let trace_id = task["trace_id"]
            .as_str()
            .unwrap_or_else(|| panic!("a task keeps its trace id: {task}"))
            .to_owned();
        if trust {
            assert_eq!(trace_id, caller, "a trusted caller's trace: {task}");
            // Sampled as the caller decided, whatever sample_ratio says.
            let began = Instant::now();
            while !exported(caller.clone()).await {
                assert!(
                    began.elapsed() < Duration::from_secs(20),
                    "the trusted request's span never reached Jaeger"
                );
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        } else if ratio == "0" {
            assert_ne!(trace_id, caller, "an untrusted caller chose the trace id");
            // An absence, read after a later trace arrived: this process stops first
            // (its exporter sends what it holds on the way out).
            sigterm(&serve);
            wait_exit(&mut serve, Duration::from_secs(15));
            unsampled = Some(trace_id);
        } else {
            assert_ne!(trace_id, caller, "an untrusted caller chose the trace id");
            let began = Instant::now();
            while !exported(trace_id.clone()).await {
                assert!(
                    began.elapsed() < Duration::from_secs(20),
                    "sampled by sample_ratio 1, the request's own trace never reached Jaeger"
                );
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            // Exported after everything the sample_ratio 0 process sent, and arrived.
            let unsampled = unsampled.take().expect("the sample_ratio 0 run came first");
            assert!(
                !exported(unsampled).await,
                "an untrusted sampled traceparent forced a trace out at sample_ratio 0"
            );
        }
        drop(serve);
    }
    env.cleanup(Some(&platform)).await;
}
