//! The transactional outbox: a state change and the message announcing it commit
//! together; the [`relay`] publishes committed rows with confirms and marks them sent.

pub mod entity;
pub mod relay;

use chrono::Utc;
use sea_orm::{ActiveValue::Set, ConnectionTrait, EntityTrait};

use crate::broker::{Envelope, EnvelopeError, Target};

pub use relay::Relay;

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
    let mut rows = Vec::with_capacity(messages.len());
    for (target, envelope) in messages {
        let body = envelope.encode(max_bytes)?;
        rows.push(entity::ActiveModel {
            message_id: Set(envelope.id.clone()),
            queue: Set(target.key()),
            // Envelopes are JSON, so always UTF-8.
            body: Set(String::from_utf8_lossy(&body).into_owned()),
            created_at: Set(Utc::now()),
            published_at: Set(None),
            attempts: Set(0),
            last_error: Set(None),
            ..Default::default()
        });
    }
    entity::Entity::insert_many(rows)
        .exec_without_returning(txn)
        .await?;
    Ok(())
}
