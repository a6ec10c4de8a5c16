//! Fair share (issues 17 and 38): two tenants on one queue, one submitting ten times the
//! other's rate and more than the consumers can take. Prints the watched tenant's queue
//! wait (submitted → started) alone and beside the flood, for a small free tenant beside
//! a large free one and for a member beside a free flood, with the plans' caps
//! (`free`: `tasks_running = 4`) and weights (`member` 4, `free` 1); and the small free
//! tenant beside the flood with no cap (tenants of one plan share only through the cap:
//! without it, the line's order), for contrast.
//!
//!     cargo bench --bench fairness            # needs scripts/services.sh up
//!
//! Capacity: `ai.short` with 8 worker slots, copywriting steps of 200 ms = 40 tasks/s.
//! Load: the watched tenant 5 tasks/s, the flood 50 tasks/s, for 15 s.
//! Goals (issue 38): the member's p99 ≤ 1.2× alone, the small free tenant's ≤ 1.5×.

// Bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use conveyor::app::Application;
use conveyor::broker::settings::QueueOverride;
use conveyor::domains::ai_tasks::entity::task;
use conveyor::plans::PlanSettings;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const SMALL_RATE: u32 = 5;
const FLOOD_RATE: u32 = 50;
const SECS: u64 = 15;

/// Submits `rate` tasks a second for `secs` as `key`; the ids accepted.
async fn drive(url: String, key: String, rate: u32, secs: u64) -> Vec<String> {
    let client = reqwest::Client::new();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate)));
    let until = Instant::now() + Duration::from_secs(secs);
    let mut sent = tokio::task::JoinSet::new();
    while Instant::now() < until {
        tick.tick().await;
        let (client, url, key) = (client.clone(), url.clone(), key.clone());
        sent.spawn(async move {
            let r = client
                .post(url)
                .bearer_auth(key)
                .json(&json!({ "kind": "copywriting", "prompt": "fair" }))
                .send()
                .await
                .ok()?;
            let v: serde_json::Value = r.json().await.ok()?;
            v["id"].as_str().map(str::to_owned)
        });
    }
    let mut ids = Vec::new();
    while let Some(r) = sent.join_next().await {
        if let Ok(Some(id)) = r {
            ids.push(id);
        }
    }
    ids
}

/// The plans of a run: `free` capped at `free_running` (0: no cap), `member` of weight 4.
fn plans(free_running: u32) -> std::collections::BTreeMap<String, PlanSettings> {
    let mut p = std::collections::BTreeMap::new();
    p.insert(
        "free".to_owned(),
        PlanSettings {
            limits: [("tasks_running".to_owned(), free_running)].into(),
            ..Default::default()
        },
    );
    p.insert(
        "member".to_owned(),
        PlanSettings {
            weight: 4,
            membership: true,
            ..Default::default()
        },
    );
    p
}

/// (p50, p99, max) of the watched tenant's queue waits in ms, once all its tasks
/// started; the watched tenant is a member when `member`.
async fn run(label: &str, free_running: u32, flood: bool, member: bool) -> (f64, f64, f64) {
    let Some(stack) = common::Stack::start("fairness").await else {
        std::process::exit(0);
    };
    let mut s = stack.settings.clone();
    s.limits =
        conveyor::limits::declared::unlimited(&conveyor::app::limits(conveyor::domains::ALL));
    s.plans = plans(free_running);
    s.queues.insert(
        "ai.short".into(),
        QueueOverride {
            prefetch: Some(8),
            ..Default::default()
        },
    );
    if let Some(step) = s
        .sections
        .get_mut("ai")
        .and_then(|ai| ai.pointer_mut("/kinds/copywriting/simulated_step_ms"))
    {
        *step = 200.into();
    }
    let app = Application::build(s.clone()).await.unwrap();
    let url = format!("http://{}/v1/tasks", app.addr());
    let platform = app.platform().clone();
    let (small, small_key) = conveyor::users::create(&platform.db, "small", i64::MAX / 4, false)
        .await
        .unwrap();
    if member {
        conveyor::users::orgs::set_user_plan(&platform.db, &small.id, Some("member"), "bench")
            .await
            .unwrap();
    }
    let (_, flood_key) = conveyor::users::create(&platform.db, "flood", i64::MAX / 4, false)
        .await
        .unwrap();
    let stop = CancellationToken::new();
    let server = tokio::spawn(app.run_until(stop.clone()));
    let workers = {
        let (p, t) = (platform.clone(), stop.clone());
        tokio::spawn(async move {
            conveyor::app::run_workers(&p, conveyor::domains::ALL, Some(&["ai".to_owned()]), t)
                .await
        })
    };
    let flood_load = flood.then(|| tokio::spawn(drive(url.clone(), flood_key, FLOOD_RATE, SECS)));
    let small = drive(url, small_key, SMALL_RATE, SECS).await;
    // Every small task started (or 120 s passed).
    let waited = Instant::now();
    let waits: Vec<f64> = loop {
        let rows = task::Entity::find()
            .filter(task::Column::Id.is_in(small.clone()))
            .all(&platform.db)
            .await
            .unwrap();
        let started: Vec<f64> = rows
            .iter()
            .filter_map(|t| {
                t.started_at
                    .map(|s| (s - t.created_at).num_milliseconds() as f64)
            })
            .collect();
        if started.len() == small.len() || waited.elapsed() > Duration::from_secs(120) {
            break started;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let flooded = match flood_load {
        Some(f) => f.await.unwrap().len(),
        None => 0,
    };
    stop.cancel();
    let _ = server.await;
    let _ = workers.await;
    stack.teardown().await;
    let mut w = waits;
    w.sort_by(f64::total_cmp);
    let pct = |p: f64| w[((w.len() - 1) as f64 * p) as usize];
    let (p50, p99, max) = (pct(0.5), pct(0.99), *w.last().unwrap());
    println!(
        "{label:<48} {:>3} tasks, wait p50 {p50:>7.0} ms  p99 {p99:>7.0} ms  max {max:>7.0} ms   (flood accepted {flooded})",
        w.len()
    );
    (p50, p99, max)
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo test --benches` runs benches with --bench absent: only announce.
    if !args.iter().any(|a| a == "--bench") {
        println!("fairness: run with `cargo bench --bench fairness`");
        return;
    }
    println!(
        "watched tenant {SMALL_RATE}/s, flood {FLOOD_RATE}/s (free), {SECS} s; capacity 8 slots × 200 ms = 40 tasks/s"
    );
    let (_, small_alone, _) = run("small free tenant alone", 4, false, false).await;
    let (_, small_flood, _) = run("small free tenant beside the free flood", 4, true, false).await;
    let (_, member_alone, _) = run("member alone", 4, false, true).await;
    let (_, member_flood, _) = run("member beside the free flood", 4, true, true).await;
    let (_, uncapped, _) = run("small free tenant, no cap (line order)", 0, true, false).await;
    println!(
        "p99 wait: member {member_flood:.0} ms beside the flood against {member_alone:.0} ms alone ({:.2}x, goal ≤ 1.2x); \
         small free tenant {small_flood:.0} against {small_alone:.0} ms ({:.2}x, goal ≤ 1.5x); \
         without the cap {uncapped:.0} ms ({:.1}x)",
        member_flood / member_alone.max(1.0),
        small_flood / small_alone.max(1.0),
        uncapped / small_alone.max(1.0)
    );
}
