//! Every process that runs workers (an API instance's relay, `conveyor consume`) tells
//! the API instances what it consumes and counted, every `ops.sample_interval_ms`, on
//! the bus. A report lost to a broker outage costs one rate sample.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::broker::Broker;
use crate::tally::Tally;
use crate::telemetry::report::{ProcessReport, REPORTS};

pub async fn run(
    broker: Arc<dyn Broker>,
    tally: Arc<Tally>,
    every: Duration,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let process = crate::instance::name().to_owned();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
        }
        let report = ProcessReport::now(&process, &tally);
        if let Err(e) = crate::bus::publish(broker.as_ref(), &REPORTS, &[report]).await {
            tracing::debug!(error = %e, "ops report not sent");
        }
    }
}
