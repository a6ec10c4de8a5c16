//! The reaper: re-drives PROCESSING tasks whose lease went stale (their consumer died or
//! hung). The re-drive is a conditional transition to RETRYING plus a fresh run message
//! in one transaction; the old attempt, if it still lives, is fenced out by the attempt
//! number. Several reapers may run: the conditional update lets one win. Each pass also
//! sweeps the parked jobs whose check messages were lost ([`super::parked::sweep`]).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sea_orm::{DatabaseConnection, TransactionTrait};
use tokio_util::sync::CancellationToken;

use super::kinds::Status;
use super::messages::publish_events;
use super::store::{self, Change, Guard};
use crate::broker::Broker;
use crate::domains::ai_tasks::settings::AiSettings;
use crate::outbox::Relay;

/// What the reaper needs: the database, the broker its events go to, the relay its run
/// messages go through.
pub struct Reaper {
    pub db: DatabaseConnection,
    pub broker: Arc<dyn Broker>,
    pub relay: Relay,
    pub max_payload: usize,
    pub ai: Arc<AiSettings>,
    /// Where a task it ends records its events.
    pub events: crate::events::Events,
}

impl Reaper {
    /// Runs a pass every `ai.reaper_interval_ms` until `shutdown`.
    pub async fn run(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let every = Duration::from_millis(self.ai.reaper_interval_ms);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                _ = tokio::time::sleep(every) => {}
            }
            match self.reap_once().await {
                Ok(0) => {}
                Ok(n) => tracing::warn!(tasks = n, "re-drove tasks with stale leases"),
                Err(e) => tracing::warn!(error = %e, "reaper round failed"),
            }
            match super::parked::sweep::sweep_once(&self.db, self.broker.as_ref()).await {
                Ok(0) => {}
                Ok(n) => tracing::warn!(waits = n, "re-sent the lost checks of parked jobs"),
                Err(e) => tracing::warn!(error = %e, "parked-job sweep failed"),
            }
        }
    }

    /// One pass; returns how many tasks were re-driven.
    pub async fn reap_once(&self) -> anyhow::Result<usize> {
        let cutoff = Utc::now() - chrono::Duration::milliseconds(self.ai.stale_after_ms as i64);
        let mut n = 0;
        for t in store::stale(&self.db, cutoff, 100).await? {
            let txn = self.db.begin().await?;
            let guard = Guard {
                statuses: &[Status::Processing],
                attempt: Some(t.attempt),
                step_index: Some(t.step_index),
                lease_free_before: Some(cutoff),
            };
            let change = Change {
                status: Some(Status::Retrying),
                release_lease: true,
                message: Some("lease expired; re-driven".into()),
                ..Default::default()
            };
            let applied = store::apply(&txn, &self.events, &t.id, &guard, change).await?;
            let Some((task, ev)) = applied else {
                continue;
            };
            store::enqueue_step(&txn, &task, task.step_index, self.max_payload).await?;
            txn.commit().await?;
            self.relay.notify();
            publish_events(self.broker.as_ref(), &[ev]).await;
            n += 1;
        }
        Ok(n)
    }
}
