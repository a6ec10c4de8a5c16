//! A provider's concurrency cap for the whole fleet (`fleet_max_concurrent`): a place
//! is a member of a sorted set in Redis scored by its lease's expiry, taken by one
//! atomic script only while fewer than the cap are live, renewed while the call runs (a
//! stream may last minutes) and removed when it ends. A process that dies leaves its
//! places to expire with their leases. On the embedded backend the fleet is this
//! process: a semaphore.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionManager;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::ExecError;

/// How long a place lives unrenewed; renewed every third of it.
const LEASE: Duration = Duration::from_secs(30);
/// How often a full cap is asked again.
const RETRY: Duration = Duration::from_millis(100);

/// Drops expired places, then takes (or, for a holder that has one, renews) a place if
/// fewer than the cap are live: 1 if held, else 0.
const TAKE: &str = r"
local now = redis.call('TIME')
local t = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local lease = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], t + lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], lease * 2)
  return 1
end
return 0
";

/// One provider's fleet-wide places.
pub enum FleetSlots {
    Redis {
        conn: ConnectionManager,
        key: String,
        cap: u32,
        script: Arc<redis::Script>,
    },
    Local(Arc<Semaphore>),
}

/// A place held; given back when dropped.
pub enum FleetPlace {
    Redis {
        conn: ConnectionManager,
        key: String,
        holder: String,
        renewal: tokio::task::JoinHandle<()>,
    },
    Local(#[allow(dead_code)] OwnedSemaphorePermit),
}

impl FleetSlots {
    pub fn redis(conn: ConnectionManager, key: String, cap: u32) -> Self {
        FleetSlots::Redis {
            conn,
            key,
            cap,
            script: Arc::new(redis::Script::new(TAKE)),
        }
    }

    pub fn local(cap: u32) -> Self {
        FleetSlots::Local(Arc::new(Semaphore::new(cap as usize)))
    }

    /// Waits for a place (or the cancel).
    pub async fn take(&self, cancel: &CancellationToken) -> Result<FleetPlace, ExecError> {
        let (conn, key, cap, script) = match self {
            FleetSlots::Local(sem) => {
                return tokio::select! {
                    _ = cancel.cancelled() => Err(ExecError::Canceled),
                    p = sem.clone().acquire_owned() => p
                        .map(FleetPlace::Local)
                        .map_err(|_| ExecError::Transient("the provider's places are closed".into())),
                };
            }
            FleetSlots::Redis {
                conn,
                key,
                cap,
                script,
            } => (conn, key, *cap, script),
        };
        let holder = uuid::Uuid::new_v4().to_string();
        loop {
            match try_take(conn, script, key, &holder, cap).await {
                Ok(true) => break,
                Ok(false) => {}
                // A store that is away does not stop the work: the provider's own
                // answers still slow it.
                Err(e) => {
                    tracing::warn!(error = %e, "provider places unavailable; going ahead");
                    break;
                }
            }
            tokio::select! {
                _ = cancel.cancelled() => return Err(ExecError::Canceled),
                _ = tokio::time::sleep(RETRY) => {}
            }
        }
        let renewal = {
            let (conn, script, key, holder) =
                (conn.clone(), script.clone(), key.clone(), holder.clone());
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(LEASE / 3).await;
                    if let Ok(false) = try_take(&conn, &script, &key, &holder, cap).await {
                        tracing::warn!(
                            "a provider place expired while held (the process stalled past its lease)"
                        );
                    }
                }
            })
        };
        Ok(FleetPlace::Redis {
            conn: conn.clone(),
            key: key.clone(),
            holder,
            renewal,
        })
    }
}

async fn try_take(
    conn: &ConnectionManager,
    script: &redis::Script,
    key: &str,
    holder: &str,
    cap: u32,
) -> Result<bool, redis::RedisError> {
    let held: i64 = script
        .key(key)
        .arg(holder)
        .arg(cap)
        .arg(LEASE.as_millis() as u64)
        .invoke_async(&mut conn.clone())
        .await?;
    Ok(held == 1)
}

impl Drop for FleetPlace {
    fn drop(&mut self) {
        if let FleetPlace::Redis {
            conn,
            key,
            holder,
            renewal,
        } = self
        {
            renewal.abort();
            let (mut conn, key, holder) = (conn.clone(), key.clone(), holder.clone());
            tokio::spawn(async move {
                let gone: Result<(), _> = redis::cmd("ZREM")
                    .arg(&key)
                    .arg(&holder)
                    .query_async(&mut conn)
                    .await;
                if let Err(e) = gone {
                    tracing::debug!(error = %e, "a provider place left to expire");
                }
            });
        }
    }
}
