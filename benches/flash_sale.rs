//! Flash-sale order intake (`POST /v1/flash-sales/{id}/orders`) at 50 and 200 concurrent
//! clients against RabbitMQ + Redis (+ PostgreSQL for the orders), next to a floor
//! measured in the same run: a bare axum handler that runs the same Lua stock script with
//! EVALSHA and answers. Then orders persisted per second end to end (intake → consumer →
//! order row). Floor and conveyor take turns in three rounds per level (this machine's
//! speed drifts over minutes); each level also prints the CPU per request by process
//! (the machine, this process with its client, RabbitMQ, Redis).
//!
//!     cargo bench --bench flash_sale              # 3000 requests per level
//!     cargo bench --bench flash_sale -- 6000
//!     BENCH_ORDERS_QUEUE=256,64,4 cargo bench --bench flash_sale   # prefetch, batch, in flight

// Test and bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

mod common;

use common::cpu::{Ticks, cpu_ticks, ms_per};
use common::{Round, summary};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::routing::post;
use conveyor::app::Application;
use conveyor::domains::flash_sale::service::Sales;
use conveyor::domains::flash_sale::stock::{RedisStock, StockStore, Take, Warm};
use conveyor::domains::flash_sale::store;
use tokio_util::sync::CancellationToken;

/// `concurrency` clients POST to `url`, client i with `keys[i % keys.len()]`.
async fn load(url: &str, keys: &[String], concurrency: usize, total: usize) -> Round {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .unwrap();
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let workers = (0..concurrency).map(|i| {
        let key = keys[i % keys.len()].clone();
        let (client, next, url) = (client.clone(), next.clone(), url.to_owned());
        tokio::spawn(async move {
            let mut lat = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let t = Instant::now();
                let r = client.post(&url).bearer_auth(&key).send().await.unwrap();
                assert_eq!(r.status(), 202, "{}", r.text().await.unwrap_or_default());
                lat.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            lat
        })
    });
    let latencies = futures::future::join_all(workers)
        .await
        .into_iter()
        .flat_map(|r| r.unwrap())
        .collect();
    Round {
        latencies,
        secs: start.elapsed().as_secs_f64(),
    }
}

fn huge_sale(id: &str) -> Warm {
    let now = chrono::Utc::now().timestamp_millis();
    Warm {
        sale_id: id.to_owned(),
        remaining: 100_000_000,
        limit: 100_000_000,
        starts_ms: now - 60_000,
        ends_ms: now + 3_600_000,
        bought: Vec::new(),
    }
}

/// The floor: the same stock script by EVALSHA, then a 202, nothing else.
async fn floor_server(stock: Arc<RedisStock>, sale: String) -> (String, CancellationToken) {
    stock.warm(&huge_sale(&sale)).await.unwrap();
    let app = axum::Router::new()
        .route(
            "/floor",
            post(
                |State((stock, sale)): State<(Arc<RedisStock>, String)>| async move {
                    let order = uuid::Uuid::now_v7().to_string();
                    let now = chrono::Utc::now().timestamp_millis();
                    match stock.take(&sale, "floor-user", &order, now).await {
                        Ok(Take::Taken { .. }) => (
                            axum::http::StatusCode::ACCEPTED,
                            axum::Json(
                                serde_json::json!({ "order_id": order, "status": "QUEUED" }),
                            ),
                        ),
                        other => panic!("floor take: {other:?}"),
                    }
                },
            ),
        )
        .with_state((stock, sale));
    common::serve(app).await
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let total: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3000);
    let Some(stack) = common::Stack::start("flash_sale").await else {
        return;
    };
    let mut s = stack.settings.clone();
    // BENCH_ORDERS_QUEUE=prefetch,batch,in_flight overrides `orders.create`'s defaults.
    if let Ok(v) = std::env::var("BENCH_ORDERS_QUEUE") {
        let n: Vec<u16> = v.split(',').map(|x| x.trim().parse().unwrap()).collect();
        let [prefetch, batch, in_flight] = n[..] else {
            panic!("BENCH_ORDERS_QUEUE is prefetch,batch,in_flight, not {v:?}");
        };
        s.queues.insert(
            "orders.create".into(),
            conveyor::broker::settings::QueueOverride {
                prefetch: Some(prefetch),
                batch: Some(batch),
                in_flight: Some(in_flight),
                ..Default::default()
            },
        );
        println!("orders.create: prefetch {prefetch}, batch {batch}, in flight {in_flight}");
    }
    let pid = std::process::id();

    let app = Application::build(s.clone()).await.unwrap();
    let addr = app.addr();
    let platform = app.platform().clone();
    let stop = CancellationToken::new();
    let server = tokio::spawn(app.run_until(stop.clone()));
    let mut keys = Vec::new();
    for i in 0..50 {
        keys.push(
            conveyor::users::create(&platform.db, &format!("buyer{i}"), 0, false)
                .await
                .unwrap()
                .1,
        );
    }
    let sales = Sales::connect(&platform.settings, platform.broker.topology())
        .await
        .unwrap();
    let now = chrono::Utc::now();
    let sale = store::create_sale(
        &platform.db,
        store::NewSale {
            item: "bench".into(),
            price: 1,
            stock: 1_000_000,
            per_user_limit: 1_000_000,
            starts_at: now - chrono::Duration::minutes(1),
            ends_at: now + chrono::Duration::hours(1),
        },
    )
    .await
    .unwrap();
    sales.warm(&platform.db, &sale).await.unwrap();
    let floor_stock = Arc::new(
        RedisStock::connect(&s.dedupe.url, &format!("{}floor", s.dedupe.key_prefix))
            .await
            .unwrap(),
    );
    let (floor_url, floor_stop) = floor_server(floor_stock, format!("floor{pid}")).await;
    let intake_url = format!("http://{addr}/v1/flash-sales/{}/orders", sale.id);

    println!(
        "[PostgreSQL + RabbitMQ + Redis] {total} requests per level, intake only (no consumer running)"
    );
    println!(
        "{:<34} {:>8} {:>7} {:>7} {:>11} {:>10}",
        "", "req/s", "p50 ms", "p99 ms", "x floor rate", "x floor p99"
    );
    const ROUNDS: usize = 3;
    // Both servers warmed first, not counted: what a process pays once (the intake's
    // identity cache filled from the database, its broker channel opened), 50 clients at
    // once, would otherwise be most of the @50 level's slowest percent.
    const WARM_UP: usize = 500;
    load(&floor_url, &keys, 50, WARM_UP).await;
    load(&intake_url, &keys, 50, WARM_UP).await;
    for clients in [50, 200] {
        let (mut floor, mut ours) = (Vec::new(), Vec::new());
        let (mut floor_cpu, mut our_cpu) = (Ticks::default(), Ticks::default());
        for _ in 0..ROUNDS {
            let before = cpu_ticks();
            floor.push(load(&floor_url, &keys, clients, total / ROUNDS).await);
            let between = cpu_ticks();
            ours.push(load(&intake_url, &keys, clients, total / ROUNDS).await);
            floor_cpu = floor_cpu.plus(between.since(before));
            our_cpu = our_cpu.plus(cpu_ticks().since(between));
        }
        let (fr, f50, f99) = summary(floor);
        let (r, p50, p99) = summary(ours);
        println!(
            "{:<34} {fr:>8.0} {f50:>7.1} {f99:>7.1}",
            format!("floor EVALSHA @{clients}")
        );
        println!(
            "{:<34} {r:>8.0} {p50:>7.1} {p99:>7.1} {:>11.2} {:>10.2}",
            format!("POST …/orders @{clients}"),
            r / fr,
            p99 / f99
        );
        // Where a request's cost goes: µs each (= ms per 1,000).
        let us = |ticks: u64| ms_per(ticks, total / ROUNDS * ROUNDS, 1000);
        println!(
            "  CPU µs per request @{clients}: floor machine {:.0} (bench process {:.0}, Redis {:.0}); \
             intake machine {:.0} (bench process {:.0}, RabbitMQ {:.0}, Redis {:.0})",
            us(floor_cpu.machine),
            us(floor_cpu.own),
            us(floor_cpu.redis),
            us(our_cpu.machine),
            us(our_cpu.own),
            us(our_cpu.broker),
            us(our_cpu.redis),
        );
    }

    // End to end: the orders accepted above, then more while the consumers run, until
    // every accepted order is a row.
    let accepted = (WARM_UP + 2 * (total / ROUNDS * ROUNDS)) as u64;
    let queue = platform
        .broker
        .topology()
        .queue(&conveyor::domains::flash_sale::queues::ORDERS_CREATE)
        .name;
    if let Ok(messages) = platform.broker.depth(&queue).await {
        // `flash_sale.orders_per_message` (CONVEYOR__FLASH_SALE__ORDERS_PER_MESSAGE=1 for
        // one message per order) bounds how many share one.
        println!(
            "the {accepted} accepted orders wait in {messages} messages ({:.1} orders per message)",
            accepted as f64 / messages.max(1) as f64
        );
    }
    let start = Instant::now();
    let workers = {
        let (p, token) = (platform.clone(), stop.clone());
        tokio::spawn(async move {
            let groups = ["orders".to_owned()];
            conveyor::app::run_workers(&p, conveyor::domains::ALL, Some(&groups), token).await
        })
    };
    loop {
        let written = store::live_orders(&platform.db, &sale.id).await.unwrap();
        if written >= accepted {
            break;
        }
        if start.elapsed() > Duration::from_secs(300) {
            println!("only {written}/{accepted} orders written in 300 s");
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "end to end: {accepted} queued orders written by the orders consumer in {secs:.2} s = {:.0} orders/s",
        accepted as f64 / secs
    );

    floor_stop.cancel();
    stop.cancel();
    let _ = server.await;
    let _ = workers.await;
    if let Ok(client) = redis::Client::open(s.dedupe.url.as_str())
        && let Ok(mut c) = client.get_multiplexed_async_connection().await
    {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*", s.dedupe.key_prefix))
            .query_async(&mut c)
            .await
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: Result<(), _> = redis::cmd("DEL").arg(keys).query_async(&mut c).await;
        }
    }
    drop(platform);
    stack.teardown().await;
}
