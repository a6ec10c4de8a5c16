//! The end-to-end figure: zero-duration tasks submitted over HTTP and run by the
//! platform's consumers until every one is SUCCESS, with CPU per task by process and
//! PostgreSQL's work per task.

use super::*;

/// Zero-duration simulated tasks, submitted at 50 concurrent clients, until all SUCCESS.
/// Returns the tasks/s.
pub(super) async fn end_to_end(
    name: &str,
    mut settings: Settings,
    total: usize,
    consumers: bool,
) -> f64 {
    settings.server.port = 0;
    settings.log.level = "error".into();
    if let Some(step) = settings
        .sections
        .get_mut("ai")
        .and_then(|ai| ai.pointer_mut("/kinds/copywriting/simulated_step_ms"))
    {
        *step = 0.into();
    }
    // The queue's defaults unless a knob says otherwise: prefetch, batch size, linger and
    // handler calls in flight.
    settings.queues.insert(
        "ai.short".into(),
        conveyor::broker::settings::QueueOverride {
            prefetch: knob("BENCH_AI_PREFETCH"),
            batch: knob("BENCH_AI_BATCH"),
            linger_ms: knob("BENCH_AI_LINGER_MS"),
            in_flight: knob("BENCH_AI_IN_FLIGHT"),
            ..Default::default()
        },
    );
    let app = Application::build(settings.clone()).await.unwrap();
    let addr = app.addr();
    let platform = app.platform().clone();
    let mut keys = Vec::new();
    for i in 0..50 {
        keys.push(
            conveyor::users::create(&platform.db, &format!("bench{i}"), i64::MAX / 4, false)
                .await
                .unwrap()
                .1,
        );
    }
    let stop = CancellationToken::new();
    let server = tokio::spawn(app.run_until(stop.clone()));
    let workers = consumers.then(|| {
        let (p, t) = (platform.clone(), stop.clone());
        tokio::spawn(async move {
            conveyor::app::run_workers(&p, conveyor::domains::ALL, Some(&["ai".to_owned()]), t)
                .await
        })
    });
    let url = format!("http://{addr}/v1/tasks");
    // Warm-up, not timed: a brand-new database's first seconds are not the steady state
    // (statements prepared per connection; plans made from the statistics of empty
    // tables until autovacuum analyzes them, within a minute of a deployment's start).
    // The run would otherwise measure only that transient, so it analyzes like
    // autovacuum would, then times.
    let warm = knob("BENCH_E2E_WARMUP").unwrap_or((total / 5).min(2000));
    if warm > 0 {
        run_tasks(&url, &keys, &platform.db, warm).await;
        analyze(&platform.db).await;
    }
    // The database's counters around the timed stretch (PostgreSQL; each snapshot waits
    // for the backends' counters to be flushed, outside the timing).
    let db_before = common::pg_stats::snapshot(&platform.db).await;
    let start = Instant::now();
    let before = cpu_ticks();
    run_tasks(&url, &keys, &platform.db, total).await;
    let secs = start.elapsed().as_secs_f64();
    let t = cpu_ticks().since(before);
    let db_after = common::pg_stats::snapshot(&platform.db).await;
    use conveyor::domains::ai_tasks::entity::task;
    let succeeded = task::Entity::find()
        .filter(task::Column::Status.eq("SUCCESS"))
        .count(&platform.db)
        .await
        .unwrap();
    assert_eq!(
        succeeded as usize,
        warm + total,
        "[{name}] every task succeeds"
    );
    let short = platform
        .broker
        .topology()
        .queue(&conveyor::domains::ai_tasks::queues::AI_SHORT);
    println!(
        "[{name}] end to end (ai.short prefetch {} batch {}, after {warm} warm-up tasks): {total} zero-duration tasks submitted and finished in {secs:.2} s = {:.0} tasks/s",
        short.prefetch,
        short.batch,
        total as f64 / secs
    );
    let per = |ticks: u64| ms_per(ticks, total, 1);
    println!(
        "[{name}]   CPU ms per task: machine {:.2} = conveyor (API, relay, workers, HTTP clients) {:.2} + database {:.2} + RabbitMQ {:.2} + Redis {:.2} + other {:.2}",
        per(t.machine),
        per(t.own),
        per(t.db),
        per(t.broker),
        per(t.redis),
        per(t.machine.saturating_sub(t.own + t.db + t.broker + t.redis)),
    );
    if let (Some(b), Some(a)) = (&db_before, &db_after) {
        // Also what other activity (autovacuum, the canary, housekeeping) did meanwhile:
        // small beside thousands of tasks.
        for line in common::pg_stats::per_unit(b, a, total) {
            println!("[{name}]   database per task: {line}");
        }
    }
    // With traces on, what became of the spans so far (a dead collector: made only
    // while it is tried).
    let spans: Vec<String> = conveyor::telemetry::metrics()
        .render()
        .lines()
        .filter(|l| l.starts_with("conveyor_trace_"))
        .map(str::to_owned)
        .collect();
    if !spans.is_empty() {
        println!("[{name}]   traces: {}", spans.join(", "));
    }
    stop.cancel();
    let _ = server.await;
    if let Some(w) = workers {
        let _ = w.await;
    }
    teardown(&settings).await;
    total as f64 / secs
}

/// Submits `n` zero-duration copywriting tasks from 50 clients and waits until none is
/// active. Every task is submitted when `load` returns; counting the active ones (few,
/// on the active-status index) costs the database far less than counting finished
/// ones, which this loop would otherwise add to the figure.
async fn run_tasks(url: &str, keys: &[String], db: &sea_orm::DatabaseConnection, n: usize) {
    load(
        url,
        keys,
        json!({ "kind": "copywriting", "prompt": "x" }),
        50,
        n,
    )
    .await;
    use conveyor::domains::ai_tasks::{Status, entity::task};
    let start = Instant::now();
    loop {
        let active = task::Entity::find()
            .filter(task::Column::Status.is_in(Status::ACTIVE))
            .count(db)
            .await
            .unwrap();
        if active == 0 {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "{active} of {n} tasks still active after 300 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Refreshes the planner's statistics, as autovacuum does on a live database.
async fn analyze(db: &sea_orm::DatabaseConnection) {
    use sea_orm::DatabaseBackend::*;
    if matches!(db.get_database_backend(), Postgres | Sqlite) {
        db.execute_unprepared("ANALYZE").await.unwrap();
    }
}

/// A number from the environment, if set.
pub(super) fn knob<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}
