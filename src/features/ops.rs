//! The operations console (`crate::ops`): this instance's board (every queue, the
//! processes' reports from the bus, every entry's panels, the alerts), `/ops` and its
//! admin API; beside the consumers, the report each process sends the boards.

use std::time::Duration;

use axum::Router;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use utoipa::OpenApi as _;

use crate::broker::QueueSpec;
use crate::contract::{Feature, Serving};
use crate::ops::{self, routes};
use crate::platform::Platform;

pub const OPS: Feature = Feature::new("ops")
    .serve(serve)
    .work(report)
    .openapi(routes::Doc::openapi);

/// This platform's totals and consumers, reported once per platform (a process that
/// runs workers twice reports once).
fn report(
    platform: &Platform,
    _: &[&'static QueueSpec],
    shutdown: CancellationToken,
) -> Vec<BoxFuture<'static, anyhow::Result<()>>> {
    if !platform.tally.take_reporter() {
        return Vec::new();
    }
    let every = Duration::from_millis(platform.settings.ops.sample_interval_ms);
    let (broker, tally) = (platform.broker.clone(), platform.tally.clone());
    vec![ops::reporter::run(broker, tally, every, shutdown).boxed()]
}

fn serve(platform: &Platform, serving: &Serving) -> anyhow::Result<Router> {
    let settings = &platform.settings;
    let board = ops::Board::start(
        ops::board::Sources {
            db: platform.db.clone(),
            broker: platform.broker.clone(),
            panels: serving.panels.to_vec(),
            alerts: ops::alerts::Alerts::new(
                platform.db.clone(),
                platform.dedupe.clone(),
                &settings.ops,
            ),
        },
        &settings.ops,
        serving.bus.subscribe(&crate::telemetry::report::REPORTS),
        serving.core.shutdown.clone(),
    );
    Ok(routes::routes(routes::Ops {
        core: serving.core.clone(),
        board,
        page: routes::page_with(&settings.telemetry.trace_link),
    }))
}
