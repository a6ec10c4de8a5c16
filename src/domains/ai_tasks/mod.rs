//! AI generation tasks, end to end.
//!
//! `POST /v1/tasks` reserves the kind's credits, inserts the task (PENDING) and writes
//! its run message to the outbox in one transaction, and answers 202. A consumer claims
//! the task's lease (PROCESSING, attempt + 1), runs the step through an [`executor`]
//! with a heartbeat and progress events, and commits the result (SUCCESS, a material, a
//! search-sync message, the reservation consumed) only while it still holds the lease.
//! Failures go RETRYING (retry tier) or FAILED (dead letter) with a refund; cancel goes
//! CANCELED with a refund; the [`reaper`] re-drives tasks whose consumer died.
//! `video_analysis` runs its steps as separate messages, each published only after
//! the previous step committed.

pub mod entity;
pub mod executor;
pub mod handler;
pub mod kinds;
pub mod limits;
pub mod messages;
pub mod metrics;
pub mod ops;
pub mod queues;
pub mod reaper;
pub mod routes;
pub mod settings;
pub mod store;
pub mod stream;
pub mod submitter;
pub mod view;

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

pub use handler::AiTaskHandler;
pub use kinds::{Status, TaskKind};

use super::{Domain, Handlers, no_probes};
use crate::api::Core;
use crate::consumer::{BatchHandler, Worker};
use crate::live::Source;
use crate::platform::Platform;
use settings::AiSettings;

/// The AI-task flow in the domain registry.
pub const DOMAIN: Domain = Domain {
    name: "ai_tasks",
    group: "ai",
    queues: queues::QUEUES,
    delays: &[],
    handlers,
    jobs,
    routes,
    openapi: <routes::Doc as utoipa::OpenApi>::openapi,
    gauges: metrics::GAUGES,
    panels: ops::PANELS,
    streams,
    limits: limits::LIMITS,
    settings: Some(settings::SECTION),
    probes: no_probes,
};

fn handlers(platform: &Platform) -> BoxFuture<'_, anyhow::Result<Handlers>> {
    async move {
        let ai = Arc::new(AiSettings::from_settings(&platform.settings)?);
        let tasks: Arc<dyn BatchHandler> = Arc::new(AiTaskHandler {
            executor: executor::from_settings(&ai)?,
            ai,
            relay: platform.relay.clone(),
            max_payload: platform.settings.broker.max_payload_bytes,
            running_cap: crate::limits::declared::configured(&platform.settings, &limits::RUNNING),
            overrides: Arc::default(),
        });
        Ok(queues::QUEUES
            .iter()
            .map(|q| (*q, Worker::Batch(tasks.clone())))
            .collect())
    }
    .boxed()
}

fn jobs(
    platform: &Platform,
    shutdown: CancellationToken,
) -> Vec<BoxFuture<'static, anyhow::Result<()>>> {
    match AiSettings::from_settings(&platform.settings) {
        Ok(ai) => vec![reaper::run(platform.clone(), Arc::new(ai), shutdown).boxed()],
        Err(e) => vec![async move { Err(e.into()) }.boxed()],
    }
}

fn routes<'a>(
    platform: &'a Platform,
    core: &'a Core,
) -> BoxFuture<'a, anyhow::Result<axum::Router>> {
    async move {
        let s = &platform.settings;
        // The submission writers get a pool of their own, so each keeps to one server
        // connection: every batch size is its own prepared statement, and on the shared
        // pool (which hands out idle connections in turn) every connection prepared
        // every size.
        let writers_db = platform.own_pool(s.database.group_commit_writers).await?;
        let submitter = submitter::Submitter::start(
            writers_db,
            platform.broker.clone(),
            platform.relay.clone(),
            s.broker.max_payload_bytes,
            s.database.group_commit_writers,
            Duration::from_millis(s.database.group_commit_linger_ms),
        );
        Ok(routes::routes(routes::Tasks {
            core: core.clone(),
            ai: Arc::new(AiSettings::from_settings(s)?),
            submitter,
        }))
    }
    .boxed()
}

fn streams(_: &Platform) -> Vec<Arc<dyn Source>> {
    vec![Arc::new(stream::TaskStream)]
}
