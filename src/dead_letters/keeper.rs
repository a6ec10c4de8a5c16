//! The DLQ keeper: consumer processes drain their queues' broker dead-letter queues into
//! the `dead_letters` table, so the table is the operator's one place to look and the
//! DLQs do not pile up. A copy of something conveyor dead-lettered is already recorded
//! (the runtime records before it moves a message) and is simply acked; a death the
//! broker decided alone (a reject by a foreign consumer, a TTL, a length limit, a quorum
//! queue's delivery limit) is recorded first, with what `x-death` says, then acked.
//! Several processes may drain one DLQ: each message is taken by one of them.

use std::time::Duration;

use futures::FutureExt as _;
use sea_orm::{DatabaseConnection, DbErr};
use tokio_util::sync::CancellationToken;

use crate::broker::{Broker, DeadCopy, DeadLetterInfo, DeadReason, Envelope, QueueSpec};

/// Messages taken per DLQ per round trip of the drain.
const CHUNK: usize = 500;

/// Drains the DLQs of `queues` every `every` until `shutdown`.
pub async fn run(
    db: DatabaseConnection,
    broker: std::sync::Arc<dyn Broker>,
    queues: Vec<&'static QueueSpec>,
    every: Duration,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    loop {
        for q in &queues {
            match drain(&db, broker.as_ref(), q).await {
                Ok(0) => {}
                Ok(n) => {
                    tracing::info!(queue = q.key, messages = n, "drained its dead-letter queue")
                }
                Err(e) => {
                    tracing::warn!(queue = q.key, error = %e, "draining a dead-letter queue failed")
                }
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(every) => {}
        }
    }
}

/// Empties `queue`'s DLQ into the table; how many messages it took.
pub async fn drain(
    db: &DatabaseConnection,
    broker: &dyn Broker,
    queue: &'static QueueSpec,
) -> Result<usize, crate::broker::BrokerError> {
    let origin = broker.topology().queue(queue).name;
    let db = db.clone();
    let keep = move |copy: DeadCopy| {
        let (db, origin) = (db.clone(), origin.clone());
        async move {
            keep(&db, queue, &origin, &copy)
                .await
                .map_err(|e| e.to_string())
        }
        .boxed()
    };
    let mut total = 0;
    loop {
        let n = broker.drain_dead(queue, CHUNK, &keep).await?;
        total += n;
        if n < CHUNK {
            return Ok(total);
        }
    }
}

/// Records `copy` unless it is recorded already.
async fn keep(
    db: &DatabaseConnection,
    queue: &'static QueueSpec,
    origin: &str,
    copy: &DeadCopy,
) -> Result<(), DbErr> {
    let (id, kind, attempt, history) = match Envelope::decode(&copy.body, usize::MAX) {
        Ok(e) => (e.id, e.kind, e.attempt, e.failures),
        Err(_) => (
            super::malformed_id(&copy.body),
            "unknown".to_owned(),
            0,
            Vec::new(),
        ),
    };
    if super::is_recorded(db, &id, queue.key).await? {
        return Ok(());
    }
    let (reason, error) = match (&copy.conveyor_reason, &copy.broker_reason) {
        (Some(r), _) => (
            DeadReason::parse(r).unwrap_or(DeadReason::Broker),
            format!("found in the dead-letter queue without a record (reason {r})"),
        ),
        (None, Some(b)) => (
            DeadReason::Broker,
            format!(
                "the broker dead-lettered it: {b} (from {}, {} time(s))",
                copy.broker_queue.as_deref().unwrap_or(origin),
                copy.broker_count.max(1)
            ),
        ),
        (None, None) => (
            DeadReason::Broker,
            "found in the dead-letter queue with no death information".to_owned(),
        ),
    };
    let info = DeadLetterInfo {
        reason,
        origin_queue: origin.to_owned(),
        attempts: attempt + 1,
        last_error: error,
    };
    // Deaths the broker decided alone reopen a replayed letter as `dead`: the replay
    // guard counts the runtime's own verdicts.
    super::record(db, &id, queue.key, &kind, &info, &history, &copy.body, 0).await?;
    metrics::counter!("conveyor_dead_letters_kept_total", "queue" => queue.key, "reason" => reason.as_str())
        .increment(1);
    Ok(())
}
