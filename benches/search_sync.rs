//! Search sync on RabbitMQ + PostgreSQL + Redis, on the embedded index and on the
//! OpenSearch node (tools/opensearch-node):
//!
//! 1. throughput: a backlog of materials (rows and their `search.sync` messages, relayed
//!    into RabbitMQ first) is drained by the sync consumer with batches of 1, 100 and 500
//!    deliveries, two batches in flight (the default; prefetch 1000 throughout);
//!    documents/s from the consumer's start until every message is settled (the
//!    runtime's claim, fence and ack included); then batch 1 with 1000 requests in flight,
//!    as a per-message consumer would send them;
//! 2. lag: materials are committed at a steady 1,000/s (ten writers, one transaction per
//!    material) with the relay and the consumer running at their defaults (batch 500,
//!    linger 20 ms; OpenSearch's 1 s refresh interval, no forced refresh); one material in
//!    ten is watched until a search finds it: p50/p99 from its commit to searchable.
//!
//! Run:
//!
//!     cargo bench --bench search_sync              # 1000 / 10000 documents, 10 s of writes
//!     cargo bench --bench search_sync -- 2000 20000 20

// Bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

mod common;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use conveyor::app::Platform;
use conveyor::broker::Envelope;
use conveyor::broker::settings::QueueOverride;
use conveyor::consumer::{BatchHandler, Context, HandlerError, Worker};
use conveyor::domains::search_sync::backend::Search;
use conveyor::domains::search_sync::handler::SyncHandler;
use conveyor::domains::search_sync::queues::SEARCH_SYNC;
use conveyor::domains::search_sync::settings::{Backend, SearchSettings};
use conveyor::domains::search_sync::store::{self, NewMaterial};
use conveyor::search::elastic::ElasticIndex;
use conveyor::search::{Query, SearchIndex};
use conveyor::settings::Settings;
use sea_orm::TransactionTrait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const ENGINE: &str = "http://127.0.0.1:9200";

/// Counts the messages the sync handler settled successfully.
struct Counting {
    inner: SyncHandler,
    done: Arc<AtomicUsize>,
}

#[async_trait]
impl BatchHandler for Counting {
    async fn handle_batch(
        &self,
        ctx: &Context,
        messages: &[Envelope],
    ) -> Vec<Result<(), HandlerError>> {
        let results = self.inner.handle_batch(ctx, messages).await;
        let ok = results.iter().filter(|r| r.is_ok()).count();
        self.done.fetch_add(ok, Ordering::Relaxed);
        results
    }
}

fn search_settings(backend: Backend, alias: &str) -> SearchSettings {
    SearchSettings {
        backend,
        path: String::new(),
        url: ENGINE.into(),
        alias: alias.into(),
        refresh: false,
        breaker_failures: 3,
        breaker_open_ms: 1000,
        semantic_min_score: 0.2,
        embedding_provider: String::new(),
    }
}

fn with_batch(settings: &Settings, batch: u16, in_flight: u16) -> Settings {
    let mut s = settings.clone();
    s.queues.insert(
        SEARCH_SYNC.key.into(),
        QueueOverride {
            prefetch: Some(1000),
            batch: Some(batch),
            linger_ms: Some(20),
            in_flight: Some(in_flight),
            ..Default::default()
        },
    );
    s
}

/// `n` materials for `owner` in transactions of up to 500; their ids.
async fn backlog(platform: &Platform, owner: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let txn = platform.db.begin().await.unwrap();
        for i in chunk {
            let m = store::create(&txn, material(owner, &format!("backlog {i}")))
                .await
                .unwrap();
            ids.push(m.id);
        }
        txn.commit().await.unwrap();
    }
    ids
}

fn material(owner: &str, title: &str) -> NewMaterial {
    NewMaterial {
        user_id: owner.into(),
        task_id: uuid::Uuid::now_v7().to_string(),
        kind: "copywriting".into(),
        title: title.into(),
        content: "春季新品 green tea launch copy for a short video, with a call to action".into(),
        vectors: None,
    }
}

async fn depth(platform: &Platform) -> u64 {
    let name = platform.broker.topology().queue(&SEARCH_SYNC).name;
    platform.broker.depth(&name).await.unwrap()
}

/// Relays the outbox into RabbitMQ until `n` messages wait in the queue.
async fn relay_all(platform: &Platform, n: u64) {
    let token = CancellationToken::new();
    let (p, t) = (platform.clone(), token.clone());
    let relay =
        tokio::spawn(async move { conveyor::app::run_workers(&p, &[], Some(&[]), t).await });
    platform.relay.notify();
    let start = Instant::now();
    while depth(platform).await < n {
        assert!(start.elapsed() < Duration::from_secs(120), "relay too slow");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    token.cancel();
    let _ = relay.await;
}

/// Drains a backlog of `n` documents with batches of `batch`; documents/s.
async fn throughput(
    settings: &Settings,
    backend: Backend,
    batch: u16,
    in_flight: u16,
    n: usize,
) -> f64 {
    let settings = with_batch(settings, batch, in_flight);
    let platform = conveyor::app::platform(settings).await.unwrap();
    let alias = format!("{}-bench-b{batch}", platform.settings.broker.namespace);
    let search = Arc::new(Search::open(search_settings(backend, &alias)).unwrap());
    let owner = uuid::Uuid::now_v7().to_string();
    backlog(&platform, &owner, n).await;
    relay_all(&platform, n as u64).await;
    let done = Arc::new(AtomicUsize::new(0));
    let handler = Counting {
        inner: SyncHandler {
            search: Arc::new(conveyor::domains::search_sync::backend::LazySearch::opened(
                search.clone(),
            )),
        },
        done: done.clone(),
    };
    let token = CancellationToken::new();
    let start = Instant::now();
    let consumer = tokio::spawn(conveyor::consumer::run::serve(
        platform.consumer_deps(),
        &SEARCH_SYNC,
        Worker::Batch(Arc::new(handler)),
        token.clone(),
    ));
    while done.load(Ordering::Relaxed) < n {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "batch {batch}: {} of {n} after 10 minutes",
            done.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let secs = start.elapsed().as_secs_f64();
    token.cancel();
    let _ = consumer.await;
    // Everything written is there.
    let found = count(search.index.as_ref(), backend, &alias, &owner).await;
    assert_eq!(found, n as u64, "every document indexed");
    if backend == Backend::Elasticsearch {
        ElasticIndex::new(ENGINE, &alias, false)
            .unwrap()
            .drop_all()
            .await
            .unwrap();
    }
    platform.broker.close().await;
    n as f64 / secs
}

async fn count(index: &dyn SearchIndex, backend: Backend, alias: &str, owner: &str) -> u64 {
    if backend == Backend::Elasticsearch {
        reqwest::Client::new()
            .post(format!("{ENGINE}/{alias}/_refresh"))
            .send()
            .await
            .unwrap();
    }
    let q = Query {
        owner: owner.into(),
        text: String::new(),
        kind: None,
        semantic: None,
        min_score: 0.0,
        offset: 0,
        limit: 1,
    };
    index.search(&q).await.unwrap().total
}

/// Which of `ids` a search finds now.
async fn visible(
    index: &dyn SearchIndex,
    backend: Backend,
    alias: &str,
    ids: &[(String, String)],
) -> Vec<String> {
    if backend == Backend::Elasticsearch {
        let values: Vec<&str> = ids.iter().map(|(id, _)| id.as_str()).collect();
        let r: Value = reqwest::Client::new()
            .post(format!("{ENGINE}/{alias}/_search"))
            .json(&json!({ "query": { "ids": { "values": values } }, "_source": false, "size": values.len() }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        return r["hits"]["hits"]
            .as_array()
            .map(|h| {
                h.iter()
                    .filter_map(|h| h["_id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
    }
    let mut found = Vec::new();
    for (id, owner) in ids {
        let q = Query {
            owner: owner.clone(),
            text: String::new(),
            kind: None,
            semantic: None,
            min_score: 0.0,
            offset: 0,
            limit: 1,
        };
        if index.search(&q).await.unwrap().total > 0 {
            found.push(id.clone());
        }
    }
    found
}

/// Commits materials at `rate`/s for `secs` with the relay and the consumer running;
/// (p50, p99, max) ms from commit to searchable over the watched ones, and how many.
async fn lag(
    settings: &Settings,
    backend: Backend,
    rate: u64,
    secs: u64,
) -> (f64, f64, f64, usize) {
    let platform = conveyor::app::platform(settings.clone()).await.unwrap();
    let alias = format!("{}-bench-lag", platform.settings.broker.namespace);
    let search = Arc::new(Search::open(search_settings(backend, &alias)).unwrap());
    let token = CancellationToken::new();
    let relay = {
        let (p, t) = (platform.clone(), token.clone());
        tokio::spawn(async move { conveyor::app::run_workers(&p, &[], Some(&[]), t).await })
    };
    let consumer = tokio::spawn(conveyor::consumer::run::serve(
        platform.consumer_deps(),
        &SEARCH_SYNC,
        Worker::Batch(Arc::new(SyncHandler {
            search: Arc::new(conveyor::domains::search_sync::backend::LazySearch::opened(
                search.clone(),
            )),
        })),
        token.clone(),
    ));
    // Watched materials (each with an owner of its own, for the embedded check): id →
    // (owner, commit instant).
    let watched: Arc<Mutex<HashMap<String, (String, Instant)>>> = Arc::default();
    let writers = 10;
    let per_writer = Duration::from_micros(1_000_000 * writers / rate);
    let end = Instant::now() + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (platform, watched) = (platform.clone(), watched.clone());
        tasks.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(per_writer);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            let mut i = 0u64;
            while Instant::now() < end {
                tick.tick().await;
                let owner = uuid::Uuid::now_v7().to_string();
                let txn = platform.db.begin().await.unwrap();
                let m = store::create(&txn, material(&owner, &format!("lag {w} {i}")))
                    .await
                    .unwrap();
                txn.commit().await.unwrap();
                let committed = Instant::now();
                platform.relay.notify();
                if i.is_multiple_of(10) {
                    watched.lock().unwrap().insert(m.id, (owner, committed));
                }
                i += 1;
            }
            i
        }));
    }
    let mut lags = Vec::new();
    let written = loop {
        let outstanding: Vec<(String, String)> = watched
            .lock()
            .unwrap()
            .iter()
            .map(|(id, (owner, _))| (id.clone(), owner.clone()))
            .collect();
        if !outstanding.is_empty() {
            let found = visible(search.index.as_ref(), backend, &alias, &outstanding).await;
            let now = Instant::now();
            let mut w = watched.lock().unwrap();
            for id in found {
                if let Some((_, at)) = w.remove(&id) {
                    lags.push((now - at).as_secs_f64() * 1000.0);
                }
            }
        }
        if Instant::now() > end && tasks.iter().all(|t| t.is_finished()) {
            if watched.lock().unwrap().is_empty() {
                let mut n = 0;
                for t in tasks.drain(..) {
                    n += t.await.unwrap();
                }
                break n;
            }
            assert!(
                Instant::now() < end + Duration::from_secs(60),
                "{} watched materials never became searchable",
                watched.lock().unwrap().len()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    token.cancel();
    let _ = consumer.await;
    let _ = relay.await;
    if backend == Backend::Elasticsearch {
        ElasticIndex::new(ENGINE, &alias, false)
            .unwrap()
            .drop_all()
            .await
            .unwrap();
    }
    platform.broker.close().await;
    let achieved = written as f64 / secs as f64;
    println!("    wrote {written} materials ({achieved:.0}/s)");
    lags.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| lags[((lags.len() - 1) as f64 * p) as usize];
    (pct(0.5), pct(0.99), lags[lags.len() - 1], lags.len())
}

#[tokio::main]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let small = args.first().copied().unwrap_or(1000);
    let large = args.get(1).copied().unwrap_or(10_000);
    let secs = args.get(2).copied().unwrap_or(10) as u64;
    let Some(stack) = common::Stack::start("search_sync").await else {
        return;
    };
    let engine_up = common::up("127.0.0.1:9200").await;
    if !engine_up {
        println!(
            "OpenSearch is not on 127.0.0.1:9200 (tools/opensearch-node/start.sh): embedded index only"
        );
    }
    let mut backends = vec![(Backend::Embedded, "embedded index")];
    if engine_up {
        backends.push((Backend::Elasticsearch, "OpenSearch 2.19 node"));
    }
    println!("search sync throughput (documents/s), backlog drained by the sync consumer");
    for (backend, name) in &backends {
        let mut rates = Vec::new();
        for batch in [1u16, 100, 500] {
            let n = if batch == 1 { small } else { large };
            let rate = throughput(&stack.settings, *backend, batch, 2, n).await;
            println!("  {name:<22} batch {batch:>3}: {rate:>8.0} docs/s ({n} documents)");
            rates.push(rate);
        }
        println!(
            "  {name:<22} batch 500 / batch 1: {:.1}x",
            rates[2] / rates[0]
        );
        // For comparison: single-document requests with as many in flight as prefetch
        // (what a per-message consumer does to the engine).
        let rate = throughput(&stack.settings, *backend, 1, 1000, small).await;
        println!("  {name:<22} batch   1 with 1000 requests in flight: {rate:>6.0} docs/s");
    }
    println!("lag from commit to searchable at 1000 writes/s for {secs} s (one in ten watched)");
    for (backend, name) in &backends {
        let (p50, p99, max, n) = lag(&stack.settings, *backend, 1000, secs).await;
        println!(
            "  {name:<22} p50 {p50:>6.0} ms  p99 {p99:>6.0} ms  max {max:>6.0} ms ({n} watched)"
        );
    }
    stack.teardown().await;
}
