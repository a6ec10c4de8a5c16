//! Search by meaning: how long one query takes over one tenant's library, exact cosine
//! over every vector of the owner's videos, on the embedded index and on the OpenSearch
//! node (tools/opensearch-node; skipped when it does not answer). Each video carries 17
//! vectors (summary, entry, 15 transcript chunks) of `dims` dimensions; another tenant's
//! videos of the same size sit in the same index (the owner filter runs first).
//!
//! Run:
//!
//!     cargo bench --bench semantic                 # 1,000 videos, 1,536 dims, 50 queries
//!     cargo bench --bench semantic -- 5000 512 50

// Bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::Instant;

use conveyor::search::elastic::ElasticIndex;
use conveyor::search::embedded::EmbeddedIndex;
use conveyor::search::semantic::normalized;
use conveyor::search::{Doc, Op, Query, SearchIndex};

const ENGINE: &str = "http://127.0.0.1:9200";
const VECTORS_PER_VIDEO: usize = 17;

/// A pseudo-random unit vector (xorshift: the same run to run).
fn vector(seed: &mut u64, dims: usize) -> Vec<f32> {
    normalized(
        (0..dims)
            .map(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                (*seed % 2001) as f32 / 1000.0 - 1.0
            })
            .collect(),
    )
}

fn videos(owner: &str, n: usize, dims: usize, seed: &mut u64) -> Vec<Op> {
    (0..n)
        .map(|i| {
            Op::Index(Doc {
                id: format!("{owner}-{i}"),
                owner: owner.into(),
                kind: "video_analysis".into(),
                title: format!("video {i}"),
                content: "summary and knowledge entry".into(),
                tags: Vec::new(),
                created_at: chrono::Utc::now(),
                version: 1,
                vectors: (0..VECTORS_PER_VIDEO).map(|_| vector(seed, dims)).collect(),
            })
        })
        .collect()
}

async fn measure(name: &str, idx: &dyn SearchIndex, n: usize, dims: usize, queries: usize) {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let started = Instant::now();
    for owner in ["mine", "theirs"] {
        let all = videos(owner, n, dims, &mut seed);
        for chunk in all.chunks(200) {
            idx.bulk(chunk.to_vec()).await.unwrap();
        }
    }
    let loaded = started.elapsed();
    let mut took = Vec::with_capacity(queries);
    for _ in 0..queries {
        let q = Query {
            owner: "mine".into(),
            text: String::new(),
            kind: None,
            semantic: Some(vector(&mut seed, dims)),
            min_score: -1.0,
            offset: 0,
            limit: 20,
        };
        let t = Instant::now();
        let hits = idx.search(&q).await.unwrap();
        took.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(hits.total as usize, n, "every video of the owner scored");
    }
    took.sort_by(f64::total_cmp);
    let at = |p: f64| took[((took.len() - 1) as f64 * p).round() as usize];
    println!(
        "{name:<11} {n:>6} videos x {VECTORS_PER_VIDEO} x {dims} dims (and as many of another tenant): \
         loaded in {:.1} s; query p50 {:.1} ms, p99 {:.1} ms ({queries} queries)",
        loaded.as_secs_f64(),
        at(0.5),
        at(0.99)
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(1_000);
    let dims = args.get(1).copied().unwrap_or(1_536);
    let queries = args.get(2).copied().unwrap_or(50);
    let dir = tempfile::tempdir().unwrap();
    let embedded = EmbeddedIndex::open(Some(dir.path())).unwrap();
    measure("embedded", &embedded, n, dims, queries).await;
    let alias = format!("bench-semantic-{}", std::process::id());
    match ElasticIndex::connect(ENGINE, &alias, true).await {
        Ok(engine) => {
            measure("opensearch", &engine, n, dims, queries).await;
            engine.drop_all().await.unwrap();
        }
        Err(e) => println!("opensearch  skipped: {e} (start tools/opensearch-node)"),
    }
}
