//! The OpenAI-compatible adapter on its own: a streamed completion reports every token
//! in order and returns their join with the usage; images come back as stored files;
//! errors are classed by what a retry can change; the client-side rate limit holds.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use conveyor::domains::ai_tasks::TaskKind;
use conveyor::domains::ai_tasks::executor::openai::OpenAi;
use conveyor::domains::ai_tasks::executor::{ExecError, Executor, Job, Report};
use conveyor::domains::ai_tasks::settings::{Protocol, ProviderSettings};
use conveyor::storage::Storage;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::fake_openai::{self, tokens_for};

fn settings(base_url: &str, rps: u32) -> ProviderSettings {
    ProviderSettings {
        protocol: Protocol::Openai,
        base_url: base_url.to_owned(),
        model: "test-model".into(),
        image_model: "test-image".into(),
        api_key: "sk-test".into(),
        timeout_ms: 5000,
        stream_idle_ms: 1000,
        requests_per_second: rps,
    }
}

fn storage(dir: &std::path::Path) -> Arc<Storage> {
    let mut s = conveyor::settings::Settings::load_from(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/config")),
        "test",
        Vec::new(),
    )
    .unwrap()
    .storage;
    s.root = dir.display().to_string();
    Storage::open(&s).unwrap()
}

/// Runs one step; the result and what it reported.
async fn run(
    exec: &OpenAi,
    kind: TaskKind,
    prompt: &str,
) -> (Result<Value, ExecError>, Vec<Report>) {
    let params = json!({});
    let previous = Value::Null;
    let job = Job {
        task_id: "t1",
        user_id: "u1",
        kind,
        step: "generate",
        step_index: 0,
        prompt,
        params: &params,
        attempt: 1,
        previous: &previous,
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = exec.run(&job, &tx, &CancellationToken::new()).await;
    drop(tx);
    let mut reports = Vec::new();
    while let Some(r) = rx.recv().await {
        reports.push(r);
    }
    (out, reports)
}

#[tokio::test]
async fn a_stream_reports_every_token_in_order_and_errors_are_classed() {
    let dir = tempfile::tempdir().unwrap();
    let (url, fake) = fake_openai::start(0).await;
    let exec = OpenAi::new(&settings(&url, 100), storage(dir.path())).unwrap();
    let (out, reports) = run(&exec, TaskKind::Copywriting, "tea for summer").await;
    let out = out.unwrap();
    let pieces: Vec<String> = reports
        .iter()
        .filter_map(|r| match r {
            Report::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        pieces,
        tokens_for("tea for summer"),
        "every token, in order"
    );
    assert_eq!(out["text"], pieces.concat());
    assert_eq!(out["model"], "test-model");
    assert_eq!(
        out["usage"]["completion_tokens"],
        pieces.len(),
        "the final usage chunk is kept"
    );

    let class = |r: Result<Value, ExecError>| match r {
        Err(ExecError::Transient(m)) => format!("transient {m}"),
        Err(ExecError::Permanent(m)) => format!("permanent {m}"),
        other => format!("{other:?}"),
    };
    assert!(
        class(run(&exec, TaskKind::Copywriting, "rate-limit").await.0)
            .starts_with("transient provider answered 429")
    );
    assert!(
        class(run(&exec, TaskKind::Copywriting, "boom").await.0)
            .starts_with("transient provider answered 503")
    );
    let refused = class(run(&exec, TaskKind::Copywriting, "bad").await.0);
    assert!(
        refused.starts_with("permanent provider answered 400")
            && refused.contains("content_policy"),
        "{refused}"
    );
    // A stream cut halfway, a malformed chunk, a stalled stream: transient.
    assert!(
        class(run(&exec, TaskKind::Copywriting, "cut-once x").await.0).contains("before [DONE]")
    );
    assert!(class(run(&exec, TaskKind::Copywriting, "malformed").await.0).contains("malformed"));
    let started = Instant::now();
    assert!(class(run(&exec, TaskKind::Copywriting, "stall").await.0).contains("silent"));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the idle bound cut the stall"
    );
    // A provider that is not there is transient.
    let gone = OpenAi::new(&settings("http://127.0.0.1:9/v1", 100), storage(dir.path())).unwrap();
    assert!(class(run(&gone, TaskKind::Copywriting, "x").await.0).starts_with("transient"));
    // A wrong key is permanent.
    let mut wrong = settings(&url, 100);
    wrong.api_key = "sk-wrong".into();
    let wrong = OpenAi::new(&wrong, storage(dir.path())).unwrap();
    assert!(
        class(run(&wrong, TaskKind::Copywriting, "x").await.0)
            .starts_with("permanent provider answered 401")
    );
    assert!(fake.calls.load(Ordering::SeqCst) >= 8);
}

#[tokio::test]
async fn images_come_back_as_stored_files_whether_base64_or_url() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _) = fake_openai::start(0).await;
    let store = storage(dir.path());
    let exec = OpenAi::new(&settings(&url, 100), store.clone()).unwrap();
    for prompt in ["a teapot", "a teapot as-url"] {
        let (out, _) = run(&exec, TaskKind::Image, prompt).await;
        let out = out.unwrap();
        let file = &out["files"][0];
        assert_eq!(file["content_type"], "image/png", "{out}");
        let key = conveyor::storage::Key::parse(file["key"].as_str().unwrap()).unwrap();
        assert_eq!(
            store.head(&key).await.unwrap().size,
            fake_openai::png_bytes().len() as u64
        );
        assert_eq!(out["usage"]["images"], 1);
    }
}

#[tokio::test]
async fn the_client_side_rate_limit_holds() {
    let dir = tempfile::tempdir().unwrap();
    let (url, fake) = fake_openai::start(0).await;
    let exec = Arc::new(OpenAi::new(&settings(&url, 5), storage(dir.path())).unwrap());
    let start = Instant::now();
    let calls = (0..10).map(|i| {
        let exec = exec.clone();
        async move {
            run(&exec, TaskKind::Copywriting, &format!("p{i}"))
                .await
                .0
                .unwrap()
        }
    });
    futures::future::join_all(calls).await;
    // 5 per second: the first 5 go at once, the next 5 over the following second.
    assert!(
        start.elapsed() >= Duration::from_millis(800),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(fake.calls.load(Ordering::SeqCst), 10);
}
