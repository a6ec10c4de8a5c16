//! Redis dedupe store: `SET key token NX PX lease` claims, compare-and-`PEXPIRE` renewals,
//! `done` marks, compare-and-delete releases, all on one auto-reconnecting multiplexed connection.

use std::time::Duration;

use async_trait::async_trait;
use redis::aio::ConnectionManager;

use super::{Claim, DONE, DedupeError, DedupeStore};

/// Claims atomically and says what was there if the claim lost.
const CLAIM: &str = r"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 'acquired' end
return redis.call('GET', KEYS[1])
";
/// [`CLAIM`] for every key: ARGV[1] is the lease, ARGV[i + 1] the token of KEYS[i].
const CLAIM_MANY: &str = r"
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('SET', key, ARGV[i + 1], 'NX', 'PX', ARGV[1]) then
    out[i] = 'acquired'
  else
    out[i] = redis.call('GET', key) or ''
  end
end
return out
";
/// `SET key done PX ttl` for every key (ARGV[1] is `done`, ARGV[2] the ttl).
const COMPLETE_MANY: &str = r"
for _, key in ipairs(KEYS) do redis.call('SET', key, ARGV[1], 'PX', ARGV[2]) end
return #KEYS
";
/// Extends the lease only if we still hold it.
const RENEW: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
";
/// Deletes the key only if we still hold it.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

pub struct RedisDedupe {
    conn: ConnectionManager,
    prefix: String,
    claim: redis::Script,
    claim_many: redis::Script,
    complete_many: redis::Script,
    renew: redis::Script,
    release: redis::Script,
}

/// What a claim script's answer for one key means.
fn claim_of(got: Option<&str>) -> Claim {
    match got {
        Some("acquired") => Claim::Acquired,
        Some(DONE) => Claim::Done,
        // Someone else's lease (or it expired between SET and GET: try again later).
        _ => Claim::InProgress,
    }
}

fn unavailable(e: redis::RedisError) -> DedupeError {
    DedupeError::Unavailable(e.to_string())
}

impl RedisDedupe {
    pub async fn connect(url: &str, prefix: &str) -> Result<Self, DedupeError> {
        let conn = crate::redis_conn::connection(url)
            .await
            .map_err(DedupeError::Unavailable)?;
        Ok(RedisDedupe {
            conn,
            prefix: format!("{prefix}:msg:"),
            claim: redis::Script::new(CLAIM),
            claim_many: redis::Script::new(CLAIM_MANY),
            complete_many: redis::Script::new(COMPLETE_MANY),
            renew: redis::Script::new(RENEW),
            release: redis::Script::new(RELEASE),
        })
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }
}

#[async_trait]
impl DedupeStore for RedisDedupe {
    async fn claim(&self, key: &str, lease: Duration) -> Result<(Claim, String), DedupeError> {
        let token = uuid::Uuid::new_v4().to_string();
        let mut conn = self.conn.clone();
        let got: Option<String> = self
            .claim
            .key(self.key(key))
            .arg(&token)
            .arg(lease.as_millis() as u64)
            .invoke_async(&mut conn)
            .await
            .map_err(unavailable)?;
        Ok((claim_of(got.as_deref()), token))
    }

    async fn claim_many(
        &self,
        keys: &[&str],
        lease: Duration,
    ) -> Result<Vec<(Claim, String)>, DedupeError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let tokens: Vec<String> = keys
            .iter()
            .map(|_| uuid::Uuid::new_v4().to_string())
            .collect();
        let mut invocation = self.claim_many.prepare_invoke();
        for key in keys {
            invocation.key(self.key(key));
        }
        invocation.arg(lease.as_millis() as u64);
        for token in &tokens {
            invocation.arg(token);
        }
        let mut conn = self.conn.clone();
        let got: Vec<String> = invocation
            .invoke_async(&mut conn)
            .await
            .map_err(unavailable)?;
        if got.len() != keys.len() {
            return Err(DedupeError::Unavailable(format!(
                "claim script answered {} results for {} keys",
                got.len(),
                keys.len()
            )));
        }
        Ok(got
            .iter()
            .zip(tokens)
            .map(|(g, token)| (claim_of(Some(g.as_str())), token))
            .collect())
    }

    async fn complete_many(&self, keys: &[&str], ttl: Duration) -> Result<(), DedupeError> {
        if keys.is_empty() {
            return Ok(());
        }
        let mut invocation = self.complete_many.prepare_invoke();
        for key in keys {
            invocation.key(self.key(key));
        }
        invocation.arg(DONE).arg(ttl.as_millis() as u64);
        let mut conn = self.conn.clone();
        invocation
            .invoke_async::<i64>(&mut conn)
            .await
            .map(|_| ())
            .map_err(unavailable)
    }

    async fn complete(&self, key: &str, ttl: Duration) -> Result<(), DedupeError> {
        let mut conn = self.conn.clone();
        redis::cmd("SET")
            .arg(self.key(key))
            .arg(DONE)
            .arg("PX")
            .arg(ttl.as_millis() as u64)
            .query_async::<()>(&mut conn)
            .await
            .map_err(unavailable)
    }

    async fn renew(&self, key: &str, token: &str, lease: Duration) -> Result<bool, DedupeError> {
        let mut conn = self.conn.clone();
        self.renew
            .key(self.key(key))
            .arg(token)
            .arg(lease.as_millis() as u64)
            .invoke_async::<i64>(&mut conn)
            .await
            .map(|n| n == 1)
            .map_err(unavailable)
    }

    async fn release(&self, key: &str, token: &str) -> Result<(), DedupeError> {
        let mut conn = self.conn.clone();
        self.release
            .key(self.key(key))
            .arg(token)
            .invoke_async::<i64>(&mut conn)
            .await
            .map(|_| ())
            .map_err(unavailable)
    }

    async fn forget(&self, key: &str) -> Result<(), DedupeError> {
        let mut conn = self.conn.clone();
        redis::cmd("DEL")
            .arg(self.key(key))
            .query_async::<i64>(&mut conn)
            .await
            .map(|_| ())
            .map_err(unavailable)
    }

    async fn ping(&self) -> Result<(), DedupeError> {
        let mut conn = self.conn.clone();
        redis::cmd("PING")
            .query_async::<String>(&mut conn)
            .await
            .map(|_| ())
            .map_err(unavailable)
    }
}
