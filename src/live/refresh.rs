//! Events between stored ones: every `live.refresh_ms`, each source is asked about the
//! things followed on this instance ([`super::Source::between`]: a waiting task's place
//! in line), and what it answers goes to their followers here only. The work follows
//! what is watched, not what exists: a thousand waiting tasks nobody watches cost nothing.

use std::time::Duration;

use sea_orm::DatabaseConnection;
use tokio_util::sync::CancellationToken;

use super::{Hub, Sources};

/// Ids asked about per round: past that many followed things on one instance, each
/// round starts where the last one stopped.
const MAX_PER_ROUND: usize = 1000;

/// Runs until `shutdown`; `every` zero: not at all.
pub fn start(
    hub: Hub,
    sources: Sources,
    db: DatabaseConnection,
    every: Duration,
    shutdown: CancellationToken,
) {
    if every.is_zero() {
        return;
    }
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        let mut next = 0usize;
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let ids = hub.followed(next, MAX_PER_ROUND);
            if ids.is_empty() {
                continue;
            }
            next = next.wrapping_add(ids.len());
            for source in sources.all() {
                match source.between(&db, &ids).await {
                    Ok(events) => hub.deliver(events),
                    Err(e) => {
                        tracing::debug!(error = %e, kind = source.kind(), "live refresh skipped")
                    }
                }
            }
        }
    });
}
