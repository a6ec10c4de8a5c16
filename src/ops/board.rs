//! The ops board, one per API instance: every `ops.sample_interval_ms` it reads the
//! broker's depths, the dead letters waiting, the domains' panels and the latest
//! [`ProcessReport`] of every live process (their totals become per-queue rates,
//! consumer counts and concurrency), keeps `ops.history_secs` of per-queue points for
//! the throughput charts, evaluates the alerts (on the leader instance) and publishes
//! the [`Snapshot`] that `/v1/admin/ops` answers and its stream pushes.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use sea_orm::DatabaseConnection;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use super::alerts::Alerts;
use super::panel::Panel;
use super::snapshot::{AlertsView, DeadLetterSummary, Point, QueueRow, Snapshot};
use crate::broker::Broker;
use crate::ops::settings::OpsSettings;
use crate::telemetry::report::ProcessReport;

/// A process's last two reports: their difference is its rate.
struct Seen {
    prev: Option<Arc<ProcessReport>>,
    last: Arc<ProcessReport>,
    received: Instant,
}

/// The board's handle: the latest snapshot, and a receiver that sees each new one.
#[derive(Clone)]
pub struct Board {
    latest: watch::Receiver<Option<Arc<Snapshot>>>,
}

/// What the board reads from.
pub struct Sources {
    pub db: DatabaseConnection,
    pub broker: Arc<dyn Broker>,
    pub panels: Vec<Panel>,
    pub alerts: Alerts,
}

impl Board {
    /// Starts listening to process reports and sampling until `shutdown`.
    pub fn start(
        sources: Sources,
        settings: &OpsSettings,
        reports_in: broadcast::Receiver<Arc<ProcessReport>>,
        shutdown: CancellationToken,
    ) -> Board {
        let (tx, rx) = watch::channel(None);
        let reports: Arc<Mutex<HashMap<String, Seen>>> = Arc::default();
        tokio::spawn(listen(reports_in, reports.clone(), shutdown.clone()));
        let every = Duration::from_millis(settings.sample_interval_ms.max(50));
        let keep = (settings.history_secs * 1000 / settings.sample_interval_ms.max(50)).max(2);
        tokio::spawn(sample_loop(
            sources,
            reports,
            tx,
            every,
            keep as usize,
            shutdown,
        ));
        Board { latest: rx }
    }

    /// The latest snapshot, if one was taken yet.
    pub fn latest(&self) -> Option<Arc<Snapshot>> {
        self.latest.borrow().clone()
    }

    /// A receiver that wakes on each new snapshot.
    pub fn watch(&self) -> watch::Receiver<Option<Arc<Snapshot>>> {
        self.latest.clone()
    }
}

async fn listen(
    mut reports_in: broadcast::Receiver<Arc<ProcessReport>>,
    reports: Arc<Mutex<HashMap<String, Seen>>>,
    shutdown: CancellationToken,
) {
    loop {
        let report = tokio::select! {
            _ = shutdown.cancelled() => return,
            r = reports_in.recv() => r,
        };
        match report {
            Ok(report) => {
                let mut seen = reports.lock().unwrap_or_else(|p| p.into_inner());
                let prev = seen.remove(&report.process).map(|s| s.last);
                seen.insert(
                    report.process.clone(),
                    Seen {
                        prev,
                        last: report,
                        received: Instant::now(),
                    },
                );
            }
            // A missed report only costs one rate sample.
            Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

async fn sample_loop(
    mut sources: Sources,
    reports: Arc<Mutex<HashMap<String, Seen>>>,
    tx: watch::Sender<Option<Arc<Snapshot>>>,
    every: Duration,
    keep: usize,
    shutdown: CancellationToken,
) {
    let mut series: BTreeMap<String, VecDeque<Point>> = BTreeMap::new();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let rates = rates(&reports, every * 3);
        let mut snapshot = match sample(&sources, &rates, every).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "ops board sample failed");
                metrics::counter!("conveyor_metrics_sample_failures_total", "source" => "ops")
                    .increment(1);
                continue;
            }
        };
        for q in &snapshot.queues {
            let points = series.entry(q.queue.clone()).or_default();
            points.push_back(Point {
                at: snapshot.at,
                ready: q.ready,
                retrying: q.retrying,
                dead: q.dead,
                published_per_sec: q.published_per_sec,
                consumed_per_sec: q.consumed_per_sec,
            });
            while points.len() > keep {
                points.pop_front();
            }
        }
        snapshot.series = series
            .iter()
            .map(|(k, v)| (k.clone(), v.iter().cloned().collect()))
            .collect();
        snapshot.alerts = sources.alerts.round(&snapshot).await;
        tx.send_replace(Some(Arc::new(snapshot)));
    }
}

/// Per queue key: rates of processed, dead, published; consumers; concurrency.
#[derive(Debug, Default, Clone, Copy)]
struct Rates {
    processed: f64,
    dead: f64,
    published: f64,
    consumers: u32,
    concurrency: u32,
}

/// Sums the live processes' rates; forgets processes silent for longer than `stale`.
fn rates(reports: &Mutex<HashMap<String, Seen>>, stale: Duration) -> HashMap<String, Rates> {
    let mut seen = reports.lock().unwrap_or_else(|p| p.into_inner());
    seen.retain(|_, s| s.received.elapsed() <= stale);
    let mut out: HashMap<String, Rates> = HashMap::new();
    for s in seen.values() {
        let secs = s
            .prev
            .as_ref()
            .map(|p| (s.last.at - p.at).num_milliseconds() as f64 / 1000.0)
            .filter(|d| *d > 0.0);
        for q in &s.last.queues {
            let r = out.entry(q.queue.clone()).or_default();
            if q.prefetch > 0 {
                r.consumers += 1;
                r.concurrency += u32::from(q.prefetch);
            }
            let before = s
                .prev
                .as_ref()
                .and_then(|p| p.queues.iter().find(|b| b.queue == q.queue));
            if let (Some(secs), Some(b)) = (secs, before) {
                let per = |now: u64, then: u64| now.saturating_sub(then) as f64 / secs;
                r.processed += per(q.processed, b.processed);
                r.dead += per(q.dead, b.dead);
                r.published += per(q.published, b.published);
            }
        }
    }
    out
}

/// One snapshot without its series and alerts (the loop adds them).
async fn sample(
    sources: &Sources,
    rates: &HashMap<String, Rates>,
    limit: Duration,
) -> anyhow::Result<Snapshot> {
    let now = Utc::now();
    let dead_letters = dead_letter_summary(&sources.db).await?;
    let panels = futures::future::join_all(sources.panels.iter().map(|p| async move {
        match tokio::time::timeout(limit, (p.load)(&sources.db)).await {
            Ok(Ok(view)) => Some(view),
            Ok(Err(e)) => {
                tracing::warn!(source = p.source, error = %e, "ops panel not loaded");
                None
            }
            Err(_) => {
                tracing::warn!(source = p.source, "ops panel not loaded in time");
                None
            }
        }
    }))
    .await
    .into_iter()
    .flatten()
    .collect::<Vec<_>>();
    let mut queues = Vec::new();
    for q in &sources.broker.topology().queues {
        let key = q.spec.key;
        let (ready, retrying) = crate::broker::waiting(sources.broker.as_ref(), q).await?;
        let waiting_dead: u64 = dead_letters
            .by_queue
            .iter()
            .filter(|d| d.queue == key)
            .map(|d| d.count)
            .sum();
        let r = rates.get(key).copied().unwrap_or_default();
        // What the worker processes report, beside the configured concurrency the
        // scrape-time gauge shows: a run-time change is visible here.
        metrics::gauge!("conveyor_queue_consumers", "queue" => key).set(f64::from(r.consumers));
        metrics::gauge!("conveyor_queue_concurrency_reported", "queue" => key)
            .set(f64::from(r.concurrency));
        let oldest = panels
            .iter()
            .filter_map(|p| p.oldest_waiting.get(key))
            .min()
            .map(|at| crate::telemetry::gauges::age_secs(*at));
        queues.push(QueueRow {
            queue: key.to_owned(),
            group: q.spec.group.to_owned(),
            ready,
            retrying,
            dead: waiting_dead,
            consumers: r.consumers,
            concurrency: r.concurrency,
            published_per_sec: round2(r.published),
            consumed_per_sec: round2(r.processed),
            dead_per_sec: round2(r.dead),
            oldest_age_secs: oldest.map(round2),
        });
    }
    Ok(Snapshot {
        at: now,
        queues,
        series: BTreeMap::new(),
        panels,
        dead_letters,
        alerts: AlertsView::default(),
    })
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Dead letters waiting, by queue and reason.
async fn dead_letter_summary(db: &DatabaseConnection) -> anyhow::Result<DeadLetterSummary> {
    let by_queue = crate::dead_letters::waiting(db).await?;
    Ok(DeadLetterSummary {
        waiting: by_queue.iter().map(|d| d.count).sum(),
        by_queue,
    })
}
