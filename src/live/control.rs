//! What ends a live stream that its API key opened: a [`KeyNotice`] on the bus, a lookup
//! where a notice may have been missed, and [`KeyWatch`]'s periodic look.

use std::sync::Arc;

use tokio::sync::broadcast::{Receiver, error::RecvError};

use crate::users::notices::KeyNotice;

/// Whether `notice` ends what was opened with the key of this hash.
pub fn ends(notice: &KeyNotice, key_hash: Option<&str>) -> bool {
    notice.ends(key_hash)
}

/// Whether the key with this hash still lets its holder in (re-checked where a notice
/// may have been missed: a stream opened while it was being revoked, a lagged receiver).
/// A database error counts as live: the notice, or the next check, still ends it.
pub async fn key_is_live(db: &sea_orm::DatabaseConnection, key_hash: &str) -> bool {
    !matches!(crate::users::authenticate_key(db, key_hash).await, Ok(None))
}

/// What ended a stream through its key notices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyEnded {
    /// Its key was revoked.
    Revoked,
    /// The notices ended: the server is stopping.
    Stopping,
}

/// Waits for a key notice that ends a stream opened with the key of `key_hash` (or for
/// the notices to end); a receiver that missed notices looks the key up instead. One
/// future for the stream's life: a receive made anew every turn of a stream's loop
/// registers on the bus's shared tail each time (a lock per event at 10,000 streams).
pub async fn key_ended(
    mut controls: Receiver<Arc<KeyNotice>>,
    key_hash: Option<String>,
    db: sea_orm::DatabaseConnection,
) -> KeyEnded {
    loop {
        match controls.recv().await {
            Ok(c) if ends(&c, key_hash.as_deref()) => return KeyEnded::Revoked,
            Err(RecvError::Lagged(_)) => {
                // Boxed: a rare look keeps its query's state off every stream's task.
                if let Some(h) = &key_hash
                    && !Box::pin(key_is_live(&db, h)).await
                {
                    return KeyEnded::Revoked;
                }
            }
            Err(RecvError::Closed) => return KeyEnded::Stopping,
            Ok(_) => {}
        }
    }
}

/// When an open stream looks at its key again: at the key's expiry (a rotated key's
/// overlap ends) and every `every` in any case, so a stream never outlives its key by
/// more than that even if the revocation notice never reached this instance (another
/// process revoked it on the embedded stack, or the fan-out lost it).
pub struct KeyWatch {
    key_hash: Option<String>,
    expires: Option<chrono::DateTime<chrono::Utc>>,
    every: std::time::Duration,
    /// Looks in a row the database could not answer.
    errors: u32,
}

/// Looks in a row that may fail (the database away) before the stream ends anyway: a
/// blip does not drop every stream, an outage does not keep a revoked key's streams.
const ERRORS_TOLERATED: u32 = 3;

impl KeyWatch {
    /// Watches the key of this hash (`None`: a stream with no key to watch).
    pub async fn start(
        db: &sea_orm::DatabaseConnection,
        key_hash: Option<String>,
        every: std::time::Duration,
    ) -> Self {
        let expires = match &key_hash {
            Some(h) => crate::users::key_expiry(db, h)
                .await
                .ok()
                .flatten()
                .flatten(),
            None => None,
        };
        KeyWatch {
            key_hash,
            expires,
            every,
            errors: 0,
        }
    }

    /// When to look again.
    pub fn next(&self) -> tokio::time::Instant {
        let regular = tokio::time::Instant::now() + self.every;
        match self.expires {
            Some(at) => {
                let left = (at - chrono::Utc::now()).to_std().unwrap_or_default();
                regular.min(tokio::time::Instant::now() + left)
            }
            None => regular,
        }
    }

    /// Whether the key still lets its holder in, read from the database (one query). A
    /// database error counts as yes [`ERRORS_TOLERATED`] times in a row, then as no.
    pub async fn still_valid(&mut self, db: &sea_orm::DatabaseConnection) -> bool {
        let Some(hash) = &self.key_hash else {
            return true;
        };
        match crate::users::key_expiry(db, hash).await {
            Ok(Some(expires)) => {
                self.errors = 0;
                self.expires = expires;
                true
            }
            Ok(None) => false,
            Err(e) => {
                self.errors += 1;
                tracing::warn!(error = %e, errors = self.errors, "a stream could not re-read its key");
                self.errors < ERRORS_TOLERATED
            }
        }
    }
}
