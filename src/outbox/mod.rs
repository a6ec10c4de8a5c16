//! The transactional outbox: a state change and the message announcing it commit
//! together; the [`relay`] publishes committed rows with confirms and marks them sent.

pub mod entity;
pub mod relay;
pub mod settings;

use chrono::Utc;
use sea_orm::{ActiveValue::Set, ConnectionTrait, EntityTrait};

use crate::broker::{Envelope, EnvelopeError, Target};

pub use relay::{Lag, Relay};

#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error(transparent)]
    Envelope(#[from] EnvelopeError),
    #[error("writing the outbox: {0}")]
    Db(#[from] sea_orm::DbErr),
}

/// Writes `envelope` for `target` into the outbox inside the caller's transaction.
/// Nothing is published until that transaction commits and the relay picks it up.
pub async fn enqueue(
    txn: &impl ConnectionTrait,
    target: Target,
    envelope: &Envelope,
    max_bytes: usize,
) -> Result<(), OutboxError> {
    enqueue_many(txn, &[(target, envelope.clone())], max_bytes).await
}

/// Writes several messages in one statement (batched submissions).
pub async fn enqueue_many(
    txn: &impl ConnectionTrait,
    messages: &[(Target, Envelope)],
    max_bytes: usize,
) -> Result<(), OutboxError> {
    if messages.is_empty() {
        return Ok(());
    }
    let rows = messages
        .iter()
        .map(|(target, envelope)| row(*target, envelope, &envelope.id, max_bytes))
        .collect::<Result<Vec<_>, _>>()?;
    entity::Entity::insert_many(rows)
        .exec_without_returning(txn)
        .await?;
    Ok(())
}

/// Writes `envelope` under an outbox id of its own (`publish_id`, unique): for sending
/// a message whose envelope id already went through the outbox once (a replay). The
/// envelope id, the consumers' dedupe key, stays the same.
pub async fn enqueue_again(
    txn: &impl ConnectionTrait,
    target: Target,
    envelope: &Envelope,
    publish_id: &str,
    max_bytes: usize,
) -> Result<(), OutboxError> {
    entity::Entity::insert(row(target, envelope, publish_id, max_bytes)?)
        .exec_without_returning(txn)
        .await?;
    Ok(())
}

fn row(
    target: Target,
    envelope: &Envelope,
    publish_id: &str,
    max_bytes: usize,
) -> Result<entity::ActiveModel, OutboxError> {
    let body = envelope.encode(max_bytes)?;
    Ok(entity::ActiveModel {
        message_id: Set(publish_id.to_owned()),
        queue: Set(target.key()),
        // Envelopes are JSON, so always UTF-8.
        body: Set(String::from_utf8_lossy(&body).into_owned()),
        created_at: Set(Utc::now()),
        published_at: Set(None),
        attempts: Set(0),
        last_error: Set(None),
        traceparent: Set(envelope.traceparent.clone()),
        ..Default::default()
    })
}

/// Published rows are kept 7 days (audits of what went out), then trimmed.
pub const RETENTION: crate::housekeeping::Retention = crate::housekeeping::Retention {
    table: "outbox",
    keep: std::time::Duration::from_secs(7 * 24 * 3600),
    trim: |db, cutoff| {
        Box::pin(async move {
            use sea_orm::{ColumnTrait as _, QueryFilter as _};
            Ok(entity::Entity::delete_many()
                .filter(entity::Column::PublishedAt.lt(cutoff))
                .exec(db)
                .await?
                .rows_affected)
        })
    },
};
