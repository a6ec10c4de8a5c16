//! Worker processes: installed consumers and jobs of the groups a process runs, what the
//! platform's features run beside them (`Feature::work`), the outbox relay and
//! housekeeping.

use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::install;
use super::retention;
use crate::broker::QueueSpec;
use crate::consumer;
use crate::domains::{Domain, Handlers, Job};
use crate::housekeeping::Retention;

pub use crate::platform::Platform;

/// Installs `domains` and runs their consumers and jobs in `groups` (consumer groups or
/// queue keys, `conveyor consume --queues`; `None`: every
/// group; empty: none), the outbox relay and housekeeping until `shutdown`.
pub async fn run_workers(
    platform: &Platform,
    domains: &[&'static Domain],
    groups: Option<&[String]>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let installed = install(platform, domains).await?;
    let workers = installed
        .into_iter()
        .map(|(d, i)| (d, i.handlers, i.jobs))
        .collect();
    let rules = retention(&platform.settings, domains);
    serve_workers(platform, workers, rules, groups, shutdown).await
}

/// What one domain runs in a worker process: its handlers and its jobs.
type Workers = (&'static Domain, Handlers, Vec<Job>);

/// Runs installed consumers and jobs (see [`run_workers`]).
pub(super) async fn serve_workers(
    platform: &Platform,
    workers: Vec<Workers>,
    rules: Vec<Retention>,
    groups: Option<&[String]>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    // Each name is a consumer group (`ai`) or a queue's key (`ai.media.extract`): the two
    // never collide (keys have a dot).
    let wanted = |queue: &QueueSpec| {
        groups.is_none_or(|gs| gs.iter().any(|g| g == queue.group || g == queue.key))
    };
    let mut tasks = JoinSet::new();
    let mut kept = Vec::new();
    for (domain, handlers, jobs) in workers {
        // A domain's jobs (its reaper, its sweeps) run beside any of its consumers; they
        // are safe to run in several processes.
        let named = groups.is_none_or(|gs| gs.iter().any(|g| g == domain.group));
        if named || handlers.iter().any(|(q, _)| wanted(q)) {
            for job in jobs {
                tasks.spawn(job(shutdown.clone()));
            }
        }
        for (queue, handler) in handlers.into_iter().filter(|(q, _)| wanted(q)) {
            kept.push(queue);
            let (deps, token) = (platform.consumer_deps(), shutdown.clone());
            tasks.spawn(async move { consumer::run::serve(deps, queue, handler, token).await });
        }
    }
    // What the platform's features run beside these consumers (the dead letters'
    // keeper of their queues, the report to the ops boards).
    let works = super::FEATURES.iter().filter_map(|f| f.work);
    for task in works.flat_map(|work| work(platform, &kept, shutdown.clone())) {
        tasks.spawn(task);
    }
    let relay = platform.relay.clone();
    let token = shutdown.clone();
    tasks.spawn(async move {
        relay.run(token).await;
        Ok(())
    });
    tasks.spawn(crate::housekeeping::run(
        platform.db.clone(),
        rules,
        shutdown.clone(),
    ));
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        let result = joined.map_err(anyhow::Error::from).and_then(|r| r);
        if let Err(e) = result {
            tracing::error!(error = %e, "worker stopped with an error");
            shutdown.cancel();
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// The installed domains' consumers and jobs, run once by whoever takes them: the API
/// process itself on the embedded broker (its queues live in it), or a caller that
/// consumes beside it (a test playing `conveyor consume` against RabbitMQ with the same
/// installed services, e.g. the same in-memory search index).
#[derive(Clone)]
pub struct InstalledWorkers {
    pub(super) platform: Platform,
    pub(super) rules: Arc<[Retention]>,
    pub(super) slot: Arc<std::sync::Mutex<Option<Vec<Workers>>>>,
}

impl InstalledWorkers {
    /// Runs the consumers and jobs of `groups` (`None`: every group) until `shutdown`;
    /// the relay and housekeeping run beside them. Runs the installation's consumers at
    /// most once: a second call runs only the relay and housekeeping.
    pub async fn run(
        &self,
        groups: Option<&[String]>,
        shutdown: CancellationToken,
    ) -> anyhow::Result<()> {
        let workers = self
            .slot
            .lock()
            .map_err(|_| anyhow::anyhow!("installed workers lock poisoned"))?
            .take()
            .unwrap_or_default();
        serve_workers(
            &self.platform,
            workers,
            self.rules.to_vec(),
            groups,
            shutdown,
        )
        .await
    }
}
