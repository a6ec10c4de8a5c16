//! Business domains. Each is one folder holding its messages, HTTP routes, message
//! handler and store, close together. This file registers their handlers with the
//! queues they consume, their routes, and their background jobs.

pub mod ai_tasks;

use std::sync::Arc;

use axum::Router;
use tokio_util::sync::CancellationToken;

use crate::app::{AppState, Platform};
use crate::broker::QueueSpec;
use crate::broker::topology::{AI_LONG, AI_PIPELINE, AI_SHORT};
use crate::consumer::Handler;

/// (queue, handler) for every domain consumer; `serve` (embedded) and `consume <group>`
/// run these. Queues without a handler are declared but not consumed.
pub fn handlers(
    platform: &Platform,
) -> anyhow::Result<Vec<(&'static QueueSpec, Arc<dyn Handler>)>> {
    let ai = Arc::new(platform.settings.ai.clone());
    let tasks: Arc<dyn Handler> = Arc::new(ai_tasks::AiTaskHandler {
        executor: ai_tasks::executor::from_settings(&ai)?,
        ai,
        relay: platform.relay.clone(),
        max_payload: platform.settings.broker.max_payload_bytes,
    });
    Ok(vec![
        (&AI_SHORT, tasks.clone()),
        (&AI_LONG, tasks.clone()),
        (&AI_PIPELINE, tasks),
    ])
}

/// Background jobs of the consumer `groups` (`None`: all), e.g. the task reaper.
pub fn jobs(
    platform: &Platform,
    groups: Option<&[String]>,
    shutdown: &CancellationToken,
) -> Vec<tokio::task::JoinHandle<anyhow::Result<()>>> {
    let wants = |g: &str| groups.is_none_or(|gs| gs.iter().any(|x| x == g));
    let mut jobs = Vec::new();
    if wants("ai") {
        let (p, ai, token) = (
            platform.clone(),
            Arc::new(platform.settings.ai.clone()),
            shutdown.clone(),
        );
        jobs.push(tokio::spawn(ai_tasks::reaper::run(p, ai, token)));
    }
    jobs
}

/// Every domain's HTTP routes.
pub fn routes() -> Router<AppState> {
    Router::new().merge(ai_tasks::routes())
}
