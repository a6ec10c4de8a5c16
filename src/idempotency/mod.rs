//! Idempotent POSTs: `Idempotency-Key` (1-128 visible ASCII characters) plus a hash of
//! the request. The first request's response is stored in the same transaction as its
//! effect; a repeat with the same body gets that response again, a repeat with a
//! different body is 422. Keys live at least 24 hours (`store::purge_older_than`).
//!
//! A route takes the [`IdempotencyKey`] extractor and, when a key came, runs its effect
//! through [`once`], which does the whole find / effect / store / replay sequence.

//!
//! Files: [`key`] (the header), [`store`] (stored answers and their trim), [`entity`].

pub mod entity;
pub mod key;
pub mod store;

use sea_orm::{DatabaseConnection, DatabaseTransaction};

pub use key::{HEADER, IdempotencyKey, key_from};
pub use store::{RETENTION, find, hash, replay};

use crate::error::ApiError;

/// What [`once`] answers.
#[derive(Debug)]
pub enum Once<T> {
    /// The effect ran now: its answer, and what else it returned (to announce after
    /// the commit).
    Done {
        status: u16,
        body: serde_json::Value,
        extra: T,
    },
    /// An earlier request with this key and body ran it: its stored answer.
    Replayed {
        status: u16,
        body: serde_json::Value,
    },
}

impl<T> Once<T> {
    pub fn answer(&self) -> (u16, &serde_json::Value) {
        match self {
            Once::Done { status, body, .. } | Once::Replayed { status, body } => (*status, body),
        }
    }
}

/// Runs `effect` at most once per (user, key): a stored answer is replayed (422 if
/// `request` differs from the one it answered); otherwise `effect` runs in a new
/// transaction that also stores its answer, so the effect and its answer commit
/// together. A concurrent twin loses on the unique key and replays the winner's answer.
pub async fn once<T, F>(
    db: &DatabaseConnection,
    user_id: &str,
    key: &str,
    request: &serde_json::Value,
    effect: F,
) -> Result<Once<T>, ApiError>
where
    F: AsyncFnOnce(&DatabaseTransaction) -> Result<(u16, serde_json::Value, T), ApiError>,
{
    let request_hash = hash(request);
    if let Some(row) = find(db, user_id, key).await? {
        let (status, body) = replay(&row, &request_hash)?;
        return Ok(Once::Replayed { status, body });
    }
    let txn = crate::db::begin_read_committed(db).await?;
    let (status, body, extra) = match effect(&txn).await {
        Ok(done) => done,
        Err(e) => {
            let _ = txn.rollback().await;
            return Err(e);
        }
    };
    let stored = store::store(&txn, user_id, key, &request_hash, status, &body).await;
    let committed = match stored {
        Ok(()) => txn.commit().await,
        Err(e) => {
            // Release the connection before reading the winner's row (SQLite has one).
            let _ = txn.rollback().await;
            Err(e)
        }
    };
    if let Err(e) = committed {
        if let Some(row) = find(db, user_id, key).await? {
            let (status, body) = replay(&row, &request_hash)?;
            return Ok(Once::Replayed { status, body });
        }
        return Err(e.into());
    }
    Ok(Once::Done {
        status,
        body,
        extra,
    })
}
