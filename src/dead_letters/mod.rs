//! Dead letters kept for operators: recorded by the consumer runtime when it
//! dead-letters a message; listed, inspected, replayed to their origin queue or
//! discarded ([`operate`]) from the admin API ([`routes`]) and the CLI, every action
//! audited.

pub mod action_entity;
pub mod compensation;
pub mod entity;
pub mod gauge;
pub mod keeper;
pub mod operate;
pub mod routes;
pub mod settings;

use chrono::Utc;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect,
};

use crate::broker::{DeadLetterInfo, Failure};

pub use action_entity::Model as Action;
pub use entity::Model as DeadLetter;
pub use gauge::GAUGE;
pub use operate::{OperateError, Operated, discard, replay};

/// Where a dead letter stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = DeadLetterStatus)]
pub enum Status {
    /// Waiting for an operator.
    Dead,
    /// Sent back to its origin queue.
    Replayed,
    /// Dropped on purpose.
    Discarded,
    /// Replayed `dead_letters.needs_fix_after_replays` times and dead again: waiting for
    /// a fix, not replayed by a filter again unless forced (by its id it still can be).
    NeedsFix,
}

impl Status {
    pub const ALL: [Status; 4] = [
        Status::Dead,
        Status::Replayed,
        Status::Discarded,
        Status::NeedsFix,
    ];

    /// The statuses an operator still has to act on.
    pub const WAITING: [Status; 2] = [Status::Dead, Status::NeedsFix];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Dead => "dead",
            Status::Replayed => "replayed",
            Status::Discarded => "discarded",
            Status::NeedsFix => "needs_fix",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// "dead, replayed, discarded or needs_fix", for messages that list the valid names.
    pub fn names() -> String {
        let [a, b, c, d] = Status::ALL.map(Status::as_str);
        format!("{a}, {b}, {c} or {d}")
    }
}

/// Which dead letters to list; `None` matches all.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    pub queue: Option<&'a str>,
    pub status: Option<Status>,
    pub reason: Option<&'a str>,
    /// The message kind (`ai.task.run`, …).
    pub kind: Option<&'a str>,
    /// Dead-lettered (last) at or after this time.
    pub since: Option<chrono::DateTime<Utc>>,
    /// What the message was about: a task, order, payment, material or delivery id.
    pub business_id: Option<&'a str>,
}

/// What a dead message was about: its envelope's correlation id (cut to the column),
/// when it has one.
fn business_id_of(body: &[u8]) -> Option<String> {
    let envelope = crate::broker::Envelope::decode(body, usize::MAX).ok()?;
    envelope
        .correlation_id
        .filter(|c| !c.is_empty())
        .map(|c| c.chars().take(64).collect())
}

/// The id a malformed body (not an envelope) is recorded under: its digest.
pub fn malformed_id(body: &[u8]) -> String {
    use sha2::{Digest as _, Sha256};
    format!("malformed-{}", &hex::encode(Sha256::digest(body))[..32])
}

/// Whether `message_id` of `queue_key` has a dead letter, in any status.
pub async fn is_recorded(
    db: &impl ConnectionTrait,
    message_id: &str,
    queue_key: &str,
) -> Result<bool, DbErr> {
    Ok(entity::Entity::find()
        .filter(entity::Column::MessageId.eq(message_id))
        .filter(entity::Column::Queue.eq(queue_key))
        .one(db)
        .await?
        .is_some())
}

/// Records a dead letter; a second record of the same message at the same attempt
/// (a redelivered dead-letter decision) is ignored, unless the first was replayed:
/// then the message died again and its row opens again with the new failure, as
/// `needs_fix` once it has been replayed `needs_fix_after` times (0: never).
#[allow(clippy::too_many_arguments)]
pub async fn record(
    db: &impl ConnectionTrait,
    message_id: &str,
    queue_key: &str,
    kind: &str,
    info: &DeadLetterInfo,
    history: &[Failure],
    body: &[u8],
    needs_fix_after: u32,
) -> Result<(), DbErr> {
    let now = Utc::now();
    let attempts = i32::try_from(info.attempts).unwrap_or(i32::MAX);
    let consumer = history.iter().rev().find_map(|f| f.consumer.clone());
    let business_id = business_id_of(body);
    let history = serde_json::to_string(history).unwrap_or_else(|_| "[]".into());
    let body = String::from_utf8_lossy(body).into_owned();
    let row = entity::ActiveModel {
        message_id: Set(message_id.to_owned()),
        queue: Set(queue_key.to_owned()),
        kind: Set(kind.to_owned()),
        reason: Set(info.reason.as_str().to_owned()),
        attempts: Set(attempts),
        last_error: Set(info.last_error.clone()),
        history: Set(history.clone()),
        body: Set(body.clone()),
        status: Set(Status::Dead.as_str().to_owned()),
        created_at: Set(now),
        updated_at: Set(now),
        business_id: Set(business_id),
        consumer: Set(consumer.clone()),
        ..Default::default()
    };
    entity::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([
                entity::Column::MessageId,
                entity::Column::Queue,
                entity::Column::Attempts,
            ])
            .do_nothing_on([entity::Column::MessageId])
            .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    // Always look (an upsert's rows-affected differs between MySQL client flags): it
    // finds nothing unless a replayed message died again at the same attempt.
    let replayed = entity::Entity::find()
        .filter(entity::Column::MessageId.eq(message_id))
        .filter(entity::Column::Queue.eq(queue_key))
        .filter(entity::Column::Attempts.eq(attempts))
        .filter(entity::Column::Status.eq(Status::Replayed.as_str()))
        .one(db)
        .await?;
    let Some(replayed) = replayed else {
        return Ok(());
    };
    let replays = action_entity::Entity::find()
        .filter(action_entity::Column::DeadLetterId.eq(replayed.id))
        .filter(action_entity::Column::Action.eq("replay"))
        .count(db)
        .await?;
    let status = if needs_fix_after > 0 && replays >= u64::from(needs_fix_after) {
        Status::NeedsFix
    } else {
        Status::Dead
    };
    entity::Entity::update_many()
        .col_expr(entity::Column::Status, Expr::value(status.as_str()))
        .col_expr(entity::Column::Reason, Expr::value(info.reason.as_str()))
        .col_expr(
            entity::Column::LastError,
            Expr::value(info.last_error.clone()),
        )
        .col_expr(entity::Column::History, Expr::value(history))
        .col_expr(entity::Column::Body, Expr::value(body))
        .col_expr(entity::Column::Consumer, Expr::value(consumer))
        .col_expr(entity::Column::UpdatedAt, Expr::value(now))
        .filter(entity::Column::Id.eq(replayed.id))
        .filter(entity::Column::Status.eq(Status::Replayed.as_str()))
        .exec(db)
        .await?;
    Ok(())
}

/// Dead letters of one queue, newest first.
pub async fn list(
    db: &impl ConnectionTrait,
    queue_key: Option<&str>,
    limit: u64,
) -> Result<Vec<DeadLetter>, DbErr> {
    let filter = Filter {
        queue: queue_key,
        ..Filter::default()
    };
    search(db, &filter, None, limit).await
}

/// Dead letters matching `filter`, newest first, below id `before` when given.
pub async fn search(
    db: &impl ConnectionTrait,
    filter: &Filter<'_>,
    before: Option<i64>,
    limit: u64,
) -> Result<Vec<DeadLetter>, DbErr> {
    let mut q = entity::Entity::find()
        .order_by_desc(entity::Column::Id)
        .limit(limit);
    if let Some(k) = filter.queue {
        q = q.filter(entity::Column::Queue.eq(k));
    }
    if let Some(s) = filter.status {
        q = q.filter(entity::Column::Status.eq(s.as_str()));
    }
    if let Some(r) = filter.reason {
        q = q.filter(entity::Column::Reason.eq(r));
    }
    if let Some(k) = filter.kind {
        q = q.filter(entity::Column::Kind.eq(k));
    }
    if let Some(t) = filter.since {
        q = q.filter(entity::Column::UpdatedAt.gte(t));
    }
    if let Some(b) = filter.business_id {
        q = q.filter(entity::Column::BusinessId.eq(b));
    }
    if let Some(id) = before {
        q = q.filter(entity::Column::Id.lt(id));
    }
    q.all(db).await
}

pub async fn get(db: &impl ConnectionTrait, id: i64) -> Result<Option<DeadLetter>, DbErr> {
    entity::Entity::find_by_id(id).one(db).await
}

/// The audit trail of one dead letter, oldest first.
pub async fn actions(db: &impl ConnectionTrait, id: i64) -> Result<Vec<Action>, DbErr> {
    action_entity::Entity::find()
        .filter(action_entity::Column::DeadLetterId.eq(id))
        .order_by_asc(action_entity::Column::Id)
        .all(db)
        .await
}

/// What a replay by filter would send: the `dead` letters of a queue (and reason), oldest
/// first, plus the `needs_fix` ones when `force`d; `parked` counts those.
#[derive(Debug, Clone, Default)]
pub struct ReplayPlan {
    pub ids: Vec<i64>,
    pub parked: usize,
}

pub async fn replay_plan(
    db: &impl ConnectionTrait,
    queue_key: &str,
    reason: Option<&str>,
    force: bool,
) -> Result<ReplayPlan, DbErr> {
    let of = |status| Filter {
        queue: Some(queue_key),
        status: Some(status),
        reason,
        ..Filter::default()
    };
    let mut ids = all_ids(db, &of(Status::Dead)).await?;
    let parked = all_ids(db, &of(Status::NeedsFix)).await?;
    let count = parked.len();
    if force {
        ids.extend(parked);
        ids.sort_unstable();
    }
    Ok(ReplayPlan { ids, parked: count })
}

/// Every id matching `filter`, oldest first.
async fn all_ids(db: &impl ConnectionTrait, filter: &Filter<'_>) -> Result<Vec<i64>, DbErr> {
    let mut ids = Vec::new();
    let mut before = None;
    loop {
        let page = search(db, filter, before, 500).await?;
        let Some(last) = page.last() else { break };
        before = Some(last.id);
        ids.extend(page.iter().map(|d| d.id));
    }
    ids.reverse();
    Ok(ids)
}

/// Letters waiting for an operator (`dead`, `needs_fix`) of one queue and reason.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Waiting {
    pub queue: String,
    pub reason: String,
    pub count: u64,
}

/// Letters waiting for an operator, by queue and reason (the gauge and the ops board).
pub async fn waiting(db: &impl ConnectionTrait) -> Result<Vec<Waiting>, DbErr> {
    let rows: Vec<(String, String, i64)> = entity::Entity::find()
        .select_only()
        .column(entity::Column::Queue)
        .column(entity::Column::Reason)
        .column_as(entity::Column::Id.count(), "count")
        .filter(entity::Column::Status.is_in(Status::WAITING.map(Status::as_str)))
        .group_by(entity::Column::Queue)
        .group_by(entity::Column::Reason)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(queue, reason, count)| Waiting {
            queue,
            reason,
            count: count.max(0) as u64,
        })
        .collect())
}
