//! `conveyor queues set-concurrency <queue> <n>`: changes a queue's prefetch at run time
//! (on the database directly, audited as the CLI's user); every consumer process of the
//! queue follows within `consumer.settings_poll_ms`, without a restart.

use clap::Subcommand;

use crate::consumer::concurrency;
use crate::settings::Settings;

#[derive(Debug, Subcommand)]
pub enum QueuesCommand {
    /// Set a queue's concurrency (prefetch per consumer process).
    SetConcurrency {
        /// The queue's key (`ai.short`, …; see `conveyor topology`).
        queue: String,
        /// Deliveries each consumer process takes at once.
        #[arg(value_parser = clap::value_parser!(u16).range(1..=i64::from(concurrency::MAX)))]
        prefetch: u16,
    },
}

pub async fn run(settings: &Settings, cmd: QueuesCommand) -> anyhow::Result<()> {
    let QueuesCommand::SetConcurrency { queue, prefetch } = cmd;
    let topology = crate::app::topology(settings, crate::domains::ALL);
    let Some(spec) = topology.queue_spec(&queue) else {
        anyhow::bail!("no queue `{queue}` (see `conveyor topology`)");
    };
    let db = crate::db::open(&settings.database).await?;
    concurrency::set(&db, spec.key, prefetch, &super::actor()).await?;
    println!(
        "{queue}: concurrency {prefetch}; consumers follow within {} ms",
        settings.consumer.settings_poll_ms
    );
    Ok(())
}
