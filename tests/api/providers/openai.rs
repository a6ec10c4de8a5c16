//! The OpenAI-compatible adapter on its own: a streamed completion reports every token
//! in order and returns their join with the usage; images come back as stored files;
//! errors are classed by what a retry can change; the client-side rate limit holds.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use conveyor::domains::ai_tasks::TaskKind;
use conveyor::providers::gate::Gates;
use conveyor::providers::openai::OpenAi;
use conveyor::providers::{ExecError, Report};
use conveyor::providers::{Protocol, ProviderSettings};
use conveyor::storage::Storage;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::fake_openai::{self, tokens_for};

pub(super) fn settings(base_url: &str, rps: u32) -> ProviderSettings {
    ProviderSettings {
        protocol: Protocol::Openai,
        base_url: base_url.to_owned(),
        model: "test-model".into(),
        image_model: "test-image".into(),
        audio_model: "whisper-1".into(),
        embedding_model: "text-embedding-3-small".into(),
        api_key: "sk-test".into(),
        timeout_ms: 5000,
        stream_idle_ms: 1000,
        requests_per_second: rps,
        requests_per_minute: 0,
        tokens_per_minute: 0,
        max_retry_wait_ms: 10_000,
        max_concurrent: 0,
        fleet_max_concurrent: 0,
        inputs: Default::default(),
        output: "text".into(),
        response_mode: "streaming".into(),
        prediction: None,
        webhook_secret: String::new(),
        expected_secs: 1800,
        segment_secs: 600,
        keyframes: 3,
        program: "ffmpeg".into(),
        max_output_mib: 1024,
    }
}

/// An adapter with a gate of its own (this process only).
fn adapter(s: &ProviderSettings, store: Arc<Storage>) -> OpenAi {
    OpenAi::new(
        s,
        Arc::new(Gates::local()).gate("fake", s.requests_per_minute, s.tokens_per_minute),
        store,
    )
    .unwrap()
}

pub(super) fn storage(dir: &std::path::Path) -> Arc<Storage> {
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
    super::run_job(exec, kind, prompt, json!({})).await
}

#[tokio::test]
async fn a_stream_reports_every_token_in_order_and_errors_are_classed() {
    let dir = tempfile::tempdir().unwrap();
    let (url, fake) = fake_openai::start(0).await;
    let exec = adapter(&settings(&url, 100), storage(dir.path()));
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
    // A 429 whose wait is longer than max_retry_wait_ms fails the attempt (transient).
    let mut impatient = settings(&url, 100);
    impatient.max_retry_wait_ms = 500;
    let impatient = adapter(&impatient, storage(dir.path()));
    assert!(
        class(run(&impatient, TaskKind::Copywriting, "rate-limit").await.0)
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
    let gone = adapter(&settings("http://127.0.0.1:9/v1", 100), storage(dir.path()));
    assert!(class(run(&gone, TaskKind::Copywriting, "x").await.0).starts_with("transient"));
    // A wrong key is permanent.
    let mut wrong = settings(&url, 100);
    wrong.api_key = "sk-wrong".into();
    let wrong = adapter(&wrong, storage(dir.path()));
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
    let exec = adapter(&settings(&url, 100), store.clone());
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
    let exec = Arc::new(adapter(&settings(&url, 5), storage(dir.path())));
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

/// Four adapters with gates of their own on the same budget store, as four consumer
/// processes have: Redis with the real backends.
async fn fleet(
    url: &str,
    per_minute: u32,
    dir: &std::path::Path,
    shared: Arc<Gates>,
) -> Vec<Arc<OpenAi>> {
    let mut s = settings(url, 1000);
    s.requests_per_minute = per_minute;
    fleet_on(&s, dir, || shared.gate("fleet-fake", per_minute, 0))
}

/// Four adapters of `s`, each with the gate `gate` makes.
fn fleet_on(
    s: &ProviderSettings,
    dir: &std::path::Path,
    gate: impl Fn() -> conveyor::providers::gate::Gate,
) -> Vec<Arc<OpenAi>> {
    (0..4)
        .map(|_| Arc::new(OpenAi::new(s, gate(), storage(dir)).unwrap()))
        .collect()
}

/// The fleet's gates: in Redis (a key prefix of this run) when Redis answers, which
/// CI requires.
async fn fleet_gates(test: &str) -> Option<Arc<Gates>> {
    if !crate::helpers::services_up(crate::helpers::Backend::RabbitMariadb, test).await {
        return None;
    }
    let dedupe = conveyor::dedupe::settings::DedupeSettings {
        kind: conveyor::dedupe::settings::DedupeKind::Redis,
        url: crate::helpers::redis_url(),
        key_prefix: crate::helpers::unique_namespace(),
        lease_ms: 5000,
        done_ttl_secs: 60,
    };
    Some(Gates::connect(&dedupe).await.unwrap())
}

#[tokio::test]
async fn four_processes_together_keep_the_providers_quota() {
    let Some(gates) = fleet_gates("providers_fleet_quota").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (url, fake) = fake_openai::start(0).await;
    // 120 a minute: one every 500 ms, whoever asks.
    let adapters = fleet(&url, 120, dir.path(), gates).await;
    let started = Instant::now();
    copy_at_once(&adapters, 3, "fleet").await;
    let arrivals = fake.arrivals.lock().unwrap().clone();
    assert_eq!(arrivals.len(), 12);
    // 12 calls at one per 500 ms (the first at once): at least 5.5 s, and no two calls
    // closer than the budget allows (a little slack for scheduling).
    assert!(
        started.elapsed() >= Duration::from_millis(5400),
        "{:?}",
        started.elapsed()
    );
    let mut at: Vec<Duration> = arrivals.iter().map(|t| t.duration_since(started)).collect();
    at.sort();
    let closest = at.windows(2).map(|w| w[1] - w[0]).min().unwrap();
    assert!(
        closest >= Duration::from_millis(400),
        "calls {closest:?} apart: {at:?}"
    );
}

#[tokio::test]
async fn a_429_with_retry_after_pauses_the_whole_fleet_then_succeeds() {
    let Some(gates) = fleet_gates("providers_fleet_pause").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (url, fake) = fake_openai::start(0).await;
    let adapters = fleet(&url, 0, dir.path(), gates).await;
    let started = Instant::now();
    let first = adapters[0].clone();
    let limited = tokio::spawn(async move {
        run(&first, TaskKind::Copywriting, "rate-limit-once spring")
            .await
            .0
    });
    // Wait for the 429, then another process calls: it waits out the same pause.
    while fake.limited_at.lock().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no 429 yet: {} calls",
            fake.calls.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let other = run(&adapters[1], TaskKind::Copywriting, "another prompt")
        .await
        .0
        .unwrap();
    let out = limited.await.unwrap().unwrap();
    assert_eq!(out["text"], tokens_for("rate-limit-once spring").concat());
    assert!(other["text"].is_string());
    let limited_at = fake.limited_at.lock().unwrap().unwrap();
    let during: Vec<_> = fake
        .arrivals
        .lock()
        .unwrap()
        .iter()
        .filter(|t| **t > limited_at && t.duration_since(limited_at) < Duration::from_millis(2900))
        .copied()
        .collect();
    assert!(
        during.is_empty(),
        "nobody called during the pause: {} calls",
        during.len()
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(6),
        "{took:?}"
    );
}

#[tokio::test]
async fn a_process_keeps_its_streams_under_the_concurrency_cap() {
    let dir = tempfile::tempdir().unwrap();
    // A token every 20 ms: each stream lasts a few hundred milliseconds.
    let (url, fake) = fake_openai::start(20).await;
    let mut s = settings(&url, 1000);
    s.max_concurrent = 2;
    let exec = Arc::new(adapter(&s, storage(dir.path())));
    copy_at_once(&[exec], 6, "capped").await;
    assert_eq!(fake.calls.load(Ordering::SeqCst), 6);
    assert_eq!(
        fake.max_active.load(Ordering::SeqCst),
        2,
        "never more than the cap, and the cap used"
    );
}

#[tokio::test]
async fn four_processes_together_keep_the_providers_token_quota() {
    let Some(gates) = fleet_gates("providers_fleet_tokens").await else {
        return;
    };
    // 120,000 tokens a minute: 2,000 a second, ten seconds' worth (20,000) at once.
    let per_process: Vec<_> = (0..4).map(|_| gates.gate("tokens", 0, 120_000)).collect();
    let started = Instant::now();
    let takes = per_process.iter().flat_map(|gate| {
        (0..4).map(move |_| async move {
            gate.ready(1_500, &CancellationToken::new()).await.unwrap();
            started.elapsed()
        })
    });
    let mut at: Vec<Duration> = futures::future::join_all(takes).await;
    at.sort();
    // 16 calls of 1,500: the first 13 (19,500) at once, the other three as the budget
    // refills (2,000 a second: 24,000 in all needs 2 s past the burst).
    assert!(at[12] < Duration::from_millis(500), "{at:?}");
    assert!(
        at[15] >= Duration::from_millis(1_700) && at[15] < Duration::from_secs(5),
        "{at:?}"
    );
}

#[tokio::test]
async fn four_processes_together_keep_the_providers_concurrency_cap() {
    let Some(gates) = fleet_gates("providers_fleet_places").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A token every 20 ms: each stream lasts a few hundred milliseconds.
    let (url, fake) = fake_openai::start(20).await;
    let adapters = fleet_on(&settings(&url, 1000), dir.path(), || {
        gates.gate("fleet-places", 0, 0).with_fleet_cap(3)
    });
    copy_at_once(&adapters, 3, "places").await;
    assert_eq!(fake.calls.load(Ordering::SeqCst), 12);
    assert_eq!(
        fake.max_active.load(Ordering::SeqCst),
        3,
        "never more than the fleet's cap, and the cap used"
    );
}

/// `per` copywriting calls on each adapter, all at once; each must succeed.
async fn copy_at_once(adapters: &[Arc<OpenAi>], per: usize, prefix: &str) {
    let calls = adapters.iter().enumerate().flat_map(|(p, a)| {
        (0..per).map(move |i| async move {
            run(a, TaskKind::Copywriting, &format!("{prefix} {p} {i}"))
                .await
                .0
                .unwrap()
        })
    });
    futures::future::join_all(calls).await;
}
