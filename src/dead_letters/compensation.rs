//! Compensation on a schedule (off by default): dead letters of the queues a policy
//! names, dead for a transient reason (`exhausted`, `broker`, `crash_loop` by default:
//! an outage, not a bad message) for longer than `older_than_secs`, and replayed fewer
//! than `max_replays` times, are replayed at the replay pace and audited as
//! `compensation`, as a person's replay would be. Letters parked as `needs_fix`, and
//! `permanent` or `malformed` ones, are never touched: they want a person. It runs in
//! the processes that consume the queues (like the keeper); a replay is a conditional
//! change, so two processes replaying the same letter replay it once.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::Utc;
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait, QueryFilter};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::operate::{self, OperateError};
use super::{Filter, Status, action_entity};
use crate::broker::Topology;

/// The audit trail's actor of a compensating replay.
pub const ACTOR: &str = "compensation";

/// `[dead_letters.compensation]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompensationSettings {
    /// Seconds between passes; 0 (the default): no compensation.
    pub interval_secs: u64,
    /// Per queue key (`ai.short`, …): what may be replayed.
    pub queues: BTreeMap<String, Policy>,
}

/// What a queue's compensation replays.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// Only letters dead at least this long (an outage first ends).
    pub older_than_secs: u64,
    /// Only letters replayed fewer times than this (by anyone).
    pub max_replays: u32,
    /// Only these reasons; never `permanent` or `malformed`.
    pub reasons: Vec<String>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            older_than_secs: 600,
            max_replays: 3,
            reasons: vec!["exhausted".into(), "broker".into(), "crash_loop".into()],
        }
    }
}

/// Reasons no schedule replays: the message itself is at fault.
const NEVER: [&str; 2] = ["permanent", "malformed"];

impl CompensationSettings {
    pub fn validate(&self) -> Result<(), crate::config::ConfigError> {
        for (queue, p) in &self.queues {
            if let Some(r) = p.reasons.iter().find(|r| NEVER.contains(&r.as_str())) {
                return Err(crate::config::ConfigError::Invalid {
                    key: "dead_letters.compensation.queues",
                    problem: format!(
                        "`{queue}`: reason `{r}` is never replayed on a schedule (the message is at fault; replay it by hand)"
                    ),
                });
            }
        }
        Ok(())
    }
}

/// What one pass did for one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass {
    pub queue: String,
    pub replayed: u64,
    /// Letters the policy matched but that were replayed `max_replays` times already.
    pub spent: u64,
}

/// Runs a pass every `interval_secs` until `shutdown` (nothing when off).
pub async fn run(
    db: DatabaseConnection,
    topology: Topology,
    settings: CompensationSettings,
    per_second: u32,
    max_payload: usize,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    if settings.interval_secs == 0 || settings.queues.is_empty() {
        return Ok(());
    }
    let every = Duration::from_secs(settings.interval_secs);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(every) => {}
        }
        match pass(&db, &topology, &settings, per_second, max_payload).await {
            Ok(done) => {
                for p in done.iter().filter(|p| p.replayed > 0) {
                    tracing::info!(queue = %p.queue, replayed = p.replayed, "compensation replayed dead letters");
                }
            }
            Err(e) => tracing::warn!(error = %e, "a compensation pass failed"),
        }
    }
}

/// One pass over every policy: replays what each allows, at `per_second`.
pub async fn pass(
    db: &DatabaseConnection,
    topology: &Topology,
    settings: &CompensationSettings,
    per_second: u32,
    max_payload: usize,
) -> Result<Vec<Pass>, DbErr> {
    let limiter = operate::replay_limiter(per_second);
    let mut out = Vec::new();
    for (queue, policy) in &settings.queues {
        let before = Utc::now() - chrono::Duration::seconds(policy.older_than_secs as i64);
        let mut done = Pass {
            queue: queue.clone(),
            replayed: 0,
            spent: 0,
        };
        for reason in policy
            .reasons
            .iter()
            .filter(|r| !NEVER.contains(&r.as_str()))
        {
            let filter = Filter {
                queue: Some(queue),
                status: Some(Status::Dead),
                reason: Some(reason),
                ..Filter::default()
            };
            let mut cursor = None;
            loop {
                let page = super::search(db, &filter, cursor, 200).await?;
                let Some(last) = page.last() else { break };
                cursor = Some(last.id);
                for letter in page.iter().filter(|d| d.updated_at <= before) {
                    let replays = action_entity::Entity::find()
                        .filter(action_entity::Column::DeadLetterId.eq(letter.id))
                        .filter(action_entity::Column::Action.eq("replay"))
                        .count(db)
                        .await?;
                    if replays >= u64::from(policy.max_replays) {
                        done.spent += 1;
                        continue;
                    }
                    limiter.until_ready().await;
                    match operate::replay(db, topology, letter.id, ACTOR, max_payload).await {
                        Ok(o) if !o.already => done.replayed += 1,
                        Ok(_) => {}
                        Err(OperateError::Db(e)) => return Err(e),
                        Err(e) => {
                            tracing::warn!(id = letter.id, error = %e, "compensation skipped a dead letter")
                        }
                    }
                }
            }
        }
        metrics::counter!("conveyor_dead_letters_compensated_total", "queue" => queue.clone())
            .increment(done.replayed);
        out.push(done);
    }
    Ok(out)
}
