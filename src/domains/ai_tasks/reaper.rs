//! The reaper: re-drives PROCESSING tasks whose lease went stale (their consumer died or
//! hung). The re-drive is a conditional transition to RETRYING plus a fresh run message
//! in one transaction; the old attempt, if it still lives, is fenced out by the attempt
//! number. Several reapers may run: the conditional update lets one win.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sea_orm::TransactionTrait;
use tokio_util::sync::CancellationToken;

use super::kinds::Status;
use super::messages::publish_events;
use super::store::{self, Change, Guard};
use crate::domains::ai_tasks::settings::AiSettings;
use crate::platform::Platform;

pub async fn run(
    platform: Platform,
    ai: Arc<AiSettings>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let every = Duration::from_millis(ai.reaper_interval_ms);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(every) => {}
        }
        match reap_once(&platform, &ai).await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(tasks = n, "re-drove tasks with stale leases"),
            Err(e) => tracing::warn!(error = %e, "reaper round failed"),
        }
    }
}

/// One pass; returns how many tasks were re-driven.
pub async fn reap_once(platform: &Platform, ai: &AiSettings) -> anyhow::Result<usize> {
    let cutoff = Utc::now() - chrono::Duration::milliseconds(ai.stale_after_ms as i64);
    let mut n = 0;
    for t in store::stale(&platform.db, cutoff, 100).await? {
        let txn = platform.db.begin().await?;
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
        let Some((task, ev)) = store::apply(&txn, &t.id, &guard, change).await? else {
            continue;
        };
        store::enqueue_step(
            &txn,
            &task,
            task.step_index,
            platform.settings.broker.max_payload_bytes,
        )
        .await?;
        txn.commit().await?;
        platform.relay.notify();
        publish_events(platform.broker.as_ref(), &[ev]).await;
        n += 1;
    }
    Ok(n)
}
