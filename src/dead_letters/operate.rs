//! Replaying and discarding dead letters. Each is one transaction: a conditional
//! status change (only a `dead` letter moves, so two operators acting at once act
//! once), for a replay the outbox row that sends the message back to its origin
//! queue, and an audit row. Asking again for what already happened is answered as
//! done, without a second effect.

use chrono::Utc;
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};
use uuid::Uuid;

use super::{DeadLetter, Status, action_entity, entity};
use crate::broker::{DeadReason, Envelope, Target, Topology};
use crate::outbox::{self, OutboxError};

#[derive(Debug, thiserror::Error)]
pub enum OperateError {
    #[error("dead letter {0} not found")]
    NotFound(i64),
    #[error(
        "dead letter {id} is {status}; only a dead letter in state `dead` or `needs_fix` can be {action}"
    )]
    Conflict {
        id: i64,
        status: String,
        action: &'static str,
    },
    #[error("dead letter {id} cannot be replayed: {why}")]
    NotReplayable { id: i64, why: String },
    #[error(transparent)]
    Db(#[from] DbErr),
}

/// The dead letter after the action, and whether it had already been done.
#[derive(Debug, Clone)]
pub struct Operated {
    pub dead_letter: DeadLetter,
    pub already: bool,
}

#[derive(Debug, Clone, Copy)]
enum Action {
    Replay,
    Discard,
}

impl Action {
    fn name(self) -> &'static str {
        match self {
            Action::Replay => "replay",
            Action::Discard => "discard",
        }
    }

    fn past(self) -> &'static str {
        match self {
            Action::Replay => "replayed",
            Action::Discard => "discarded",
        }
    }

    fn outcome(self) -> Status {
        match self {
            Action::Replay => Status::Replayed,
            Action::Discard => Status::Discarded,
        }
    }
}

/// Sends dead letter `id` back to its origin queue (through the outbox: the relay
/// publishes it once this commits) with a fresh attempt budget. `actor` goes to the
/// audit trail.
pub async fn replay(
    db: &DatabaseConnection,
    topology: &Topology,
    id: i64,
    actor: &str,
    max_payload: usize,
) -> Result<Operated, OperateError> {
    act(db, Some(topology), id, Action::Replay, actor, max_payload).await
}

/// Marks dead letter `id` as dropped on purpose.
pub async fn discard(
    db: &DatabaseConnection,
    id: i64,
    actor: &str,
) -> Result<Operated, OperateError> {
    act(db, None, id, Action::Discard, actor, usize::MAX).await
}

/// `topology` knows the queues a replay may go back to (a discard needs none).
async fn act(
    db: &DatabaseConnection,
    topology: Option<&Topology>,
    id: i64,
    action: Action,
    actor: &str,
    max_payload: usize,
) -> Result<Operated, OperateError> {
    let txn = crate::db::begin_read_committed(db).await?;
    let row = entity::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .ok_or(OperateError::NotFound(id))?;
    if !Status::WAITING.iter().any(|s| row.status == s.as_str()) {
        txn.rollback().await?;
        return settled(row, action);
    }
    let send = match action {
        Action::Replay => Some(replayable(&row, topology)?),
        Action::Discard => None,
    };
    let now = Utc::now();
    let moved = entity::Entity::update_many()
        .col_expr(
            entity::Column::Status,
            Expr::value(action.outcome().as_str()),
        )
        .col_expr(entity::Column::UpdatedAt, Expr::value(now))
        .filter(entity::Column::Id.eq(id))
        .filter(entity::Column::Status.is_in(Status::WAITING.map(Status::as_str)))
        .exec(&txn)
        .await?
        .rows_affected;
    if moved == 0 {
        // Another operator acted between our read and our update.
        txn.rollback().await?;
        let row = super::get(db, id)
            .await?
            .ok_or(OperateError::NotFound(id))?;
        return settled(row, action);
    }
    if let Some((target, envelope)) = send {
        let publish_id = format!("replay-{}", Uuid::now_v7());
        outbox::enqueue_again(&txn, target, &envelope, &publish_id, max_payload)
            .await
            .map_err(|e| match e {
                OutboxError::Db(e) => OperateError::Db(e),
                OutboxError::Envelope(e) => OperateError::NotReplayable {
                    id,
                    why: e.to_string(),
                },
            })?;
    }
    action_entity::Entity::insert(action_entity::ActiveModel {
        dead_letter_id: Set(id),
        action: Set(action.name().to_owned()),
        actor: Set(actor.chars().take(128).collect()),
        at: Set(now),
        ..Default::default()
    })
    .exec_without_returning(&txn)
    .await?;
    txn.commit().await?;
    metrics::counter!("conveyor_dead_letters_operated_total", "action" => action.name())
        .increment(1);
    tracing::info!(id, action = action.name(), actor, queue = %row.queue, "dead letter {}", action.past());
    Ok(Operated {
        dead_letter: DeadLetter {
            status: action.outcome().as_str().to_owned(),
            updated_at: now,
            ..row
        },
        already: false,
    })
}

/// The answer for a dead letter that is no longer `dead`: done already, or a conflict.
fn settled(row: DeadLetter, action: Action) -> Result<Operated, OperateError> {
    if row.status == action.outcome().as_str() {
        Ok(Operated {
            dead_letter: row,
            already: true,
        })
    } else {
        Err(OperateError::Conflict {
            id: row.id,
            status: row.status,
            action: action.past(),
        })
    }
}

/// Where and what to send back, or why it cannot be.
fn replayable(
    row: &DeadLetter,
    topology: Option<&Topology>,
) -> Result<(Target, Envelope), OperateError> {
    let refuse = |why: String| OperateError::NotReplayable { id: row.id, why };
    if row.reason == DeadReason::Malformed.as_str() {
        return Err(refuse(
            "its body is not a valid envelope; discard it (and publish a corrected message)".into(),
        ));
    }
    let target = match topology.and_then(|t| t.target(&row.queue)) {
        Some(t @ Target::Queue(_)) => t,
        _ => {
            return Err(refuse(format!(
                "its origin queue `{}` is unknown to this version",
                row.queue
            )));
        }
    };
    let envelope =
        Envelope::decode(row.body.as_bytes(), usize::MAX).map_err(|e| refuse(e.to_string()))?;
    Ok((target, envelope.replayed()))
}

/// Paces replays (`dead_letters.replay_per_second`): a backlog replayed in bulk must
/// not flood the queue it returns to.
pub type ReplayLimiter = governor::DefaultDirectRateLimiter;

pub fn replay_limiter(per_second: u32) -> ReplayLimiter {
    let rate = std::num::NonZeroU32::new(per_second).unwrap_or(std::num::NonZeroU32::MIN);
    governor::RateLimiter::direct(governor::Quota::per_second(rate))
}
