//! Conveyor's side of the delivery bench: a no-op handler behind the real consume loop
//! (`consumer::run::serve`), fed by the platform's own confirmed publishes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use conveyor::broker::settings::QueueOverride;
use conveyor::broker::{Envelope, Outgoing, Target};
use conveyor::consumer::{BatchHandler, Context, Handler, HandlerError, Worker};
use conveyor::dedupe::settings::DedupeKind;
use conveyor::domains::ai_tasks::queues::AI_SHORT;
use conveyor::settings::Settings;
use tokio_util::sync::CancellationToken;

use crate::common::cpu::cpu_ticks;
use crate::common::lapin::now_us;
use crate::report::{Kind, Report, Set};
use crate::{PUBLISH_WINDOW, prefetch};

/// Counts handled messages and their latency; cancels the consumer once `n` are done.
struct Counter {
    n: usize,
    done: AtomicUsize,
    lat: std::sync::Mutex<Vec<u64>>,
    stop: CancellationToken,
}

impl Counter {
    fn handled(&self, messages: &[Envelope]) {
        let now = now_us();
        if let Ok(mut lat) = self.lat.lock() {
            lat.extend(
                messages
                    .iter()
                    .map(|m| now.saturating_sub(m.created_at.timestamp_micros() as u64)),
            );
        }
        if self.done.fetch_add(messages.len(), Ordering::Relaxed) + messages.len() >= self.n {
            self.stop.cancel();
        }
    }
}

#[async_trait]
impl Handler for Counter {
    async fn handle(&self, _: &Context, m: &Envelope) -> Result<(), HandlerError> {
        self.handled(std::slice::from_ref(m));
        Ok(())
    }
}

#[async_trait]
impl BatchHandler for Counter {
    async fn handle_batch(&self, _: &Context, m: &[Envelope]) -> Vec<Result<(), HandlerError>> {
        self.handled(m);
        m.iter().map(|_| Ok(())).collect()
    }
}

/// Publishes `n` envelopes in confirmed windows while `consumer::run::serve` consumes
/// them with a no-op handler: one message per call (`batch` = 1), or batches of `batch`
/// (claims, fence rows and acks per batch). The run ends when the consumer has drained
/// (every message settled).
pub async fn core(
    name: &str,
    set: Set,
    mut settings: Settings,
    n: usize,
    batch: u16,
) -> anyhow::Result<Report> {
    settings.queues.insert(
        "ai.short".into(),
        QueueOverride {
            prefetch: Some(prefetch()),
            batch: Some(batch),
            linger_ms: Some(5),
            ..Default::default()
        },
    );
    let platform = conveyor::app::platform(settings).await?;
    let deps = platform.consumer_deps();
    let counter = Arc::new(Counter {
        n,
        done: AtomicUsize::new(0),
        lat: std::sync::Mutex::new(Vec::with_capacity(n)),
        stop: CancellationToken::new(),
    });
    let worker = if batch > 1 {
        Worker::Batch(counter.clone())
    } else {
        Worker::One(counter.clone())
    };
    let start = Instant::now();
    let before = cpu_ticks();
    let consume = tokio::spawn(conveyor::consumer::run::serve(
        deps,
        &AI_SHORT,
        worker,
        counter.stop.clone(),
    ));
    let mut sent = 0;
    while sent < n {
        let batch: Vec<Outgoing> = (0..PUBLISH_WINDOW.min(n - sent))
            .map(|i| {
                Outgoing::new(
                    Target::Queue(&AI_SHORT),
                    &Envelope::new("bench", serde_json::json!({ "i": sent + i })),
                    65536,
                )
            })
            .collect::<Result<_, _>>()?;
        sent += batch.len();
        platform.broker.publish_batch(&batch).await?;
    }
    consume.await??;
    let elapsed = start.elapsed();
    let ticks = cpu_ticks().since(before);
    let done = counter.done.load(Ordering::Relaxed);
    anyhow::ensure!(done >= n, "only {done} of {n} handled");
    let work = platform.broker.topology().queue(&AI_SHORT).name;
    let left = platform.broker.depth(&work).await.unwrap_or(0);
    anyhow::ensure!(left == 0, "{left} messages left in the queue");
    let latencies_us = std::mem::take(&mut *counter.lat.lock().unwrap());
    platform.broker.teardown().await.ok();
    platform.broker.close().await;
    if platform.settings.dedupe.kind == DedupeKind::Redis {
        forget_keys(
            &platform.settings.dedupe.url,
            &platform.settings.dedupe.key_prefix,
        )
        .await;
    }
    Ok(Report::measured(
        name,
        set,
        Kind::Conveyor,
        n,
        elapsed,
        latencies_us,
        ticks,
    ))
}

/// Deletes this run's dedupe keys (never FLUSHDB: the server is shared).
async fn forget_keys(url: &str, prefix: &str) {
    let Ok(client) = redis::Client::open(url) else {
        return;
    };
    let Ok(mut c) = client.get_multiplexed_async_connection().await else {
        return;
    };
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut c)
        .await
        .unwrap_or_default();
    for chunk in keys.chunks(1000) {
        let _: Result<i64, _> = redis::cmd("DEL").arg(chunk).query_async(&mut c).await;
    }
}
