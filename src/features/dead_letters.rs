//! Dead letters for operators (`crate::dead_letters`): the admin API (list, inspect,
//! replay, discard), the gauge of letters waiting, and beside a process's consumers the
//! keeper that records their queues' dead letters and the compensation of their policies.

use std::time::Duration;

use axum::Router;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use utoipa::OpenApi as _;

use crate::broker::QueueSpec;
use crate::contract::{Feature, Serving};
use crate::dead_letters::compensation::{self, CompensationSettings};
use crate::dead_letters::{self, keeper, routes};
use crate::platform::Platform;

pub const DEAD_LETTERS: Feature = Feature::new("dead_letters")
    .serve(serve)
    .work(work)
    .gauges(&[dead_letters::GAUGE])
    .openapi(routes::Doc::openapi);

fn serve(platform: &Platform, serving: &Serving) -> anyhow::Result<Router> {
    Ok(routes::routes(routes::DeadLetters::new(
        serving.core.clone(),
        &platform.settings.dead_letters,
    )))
}

/// The keeper and the compensation of the queues this process consumes (none: nothing).
fn work(
    platform: &Platform,
    consumed: &[&'static QueueSpec],
    shutdown: CancellationToken,
) -> Vec<BoxFuture<'static, anyhow::Result<()>>> {
    if consumed.is_empty() {
        return Vec::new();
    }
    let dl = &platform.settings.dead_letters;
    let keys: Vec<&'static str> = consumed.iter().map(|q| q.key).collect();
    let compensation = CompensationSettings {
        // The policies of the queues this process consumes.
        queues: dl
            .compensation
            .queues
            .iter()
            .filter(|(q, _)| keys.contains(&q.as_str()))
            .map(|(q, p)| (q.clone(), p.clone()))
            .collect(),
        ..dl.compensation.clone()
    };
    vec![
        keeper::run(
            platform.db.clone(),
            platform.broker.clone(),
            consumed.to_vec(),
            Duration::from_millis(dl.keeper_interval_ms),
            shutdown.clone(),
        )
        .boxed(),
        compensation::run(
            platform.db.clone(),
            platform.broker.topology().clone(),
            compensation,
            dl.replay_per_second,
            platform.settings.broker.max_payload_bytes,
            shutdown,
        )
        .boxed(),
    ]
}
