//! Rate counting: a GCRA per key, in Redis (one Lua call, shared by every instance) or
//! in this process (`governor`).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use redis::aio::ConnectionManager;

/// `burst` actions at once, refilled one per `interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    interval: Duration,
    burst: NonZeroU32,
}

impl Rate {
    /// `count` per `per`, with `burst` at once (at least 1); `None` when `count` is 0 (off).
    pub fn new(count: u32, per: Duration, burst: u32) -> Option<Rate> {
        let count = NonZeroU32::new(count)?;
        Some(Rate {
            interval: (per / count.get()).max(Duration::from_micros(1)),
            burst: NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN),
        })
    }
}

#[async_trait]
pub trait RateStore: Send + Sync {
    /// Takes one from `key`'s budget: `None` if allowed, else how long until it would be.
    async fn take(&self, key: &str, rate: Rate) -> Result<Option<Duration>, String> {
        self.take_n(key, rate, 1).await
    }

    /// Takes `n` at once (at most the burst: a bigger `n` counts as the burst). Nothing
    /// is taken when refused.
    async fn take_n(&self, key: &str, rate: Rate, n: u32) -> Result<Option<Duration>, String>;
}

/// In this process: one keyed limiter per distinct rate (overrides make several).
#[derive(Default)]
pub struct LocalRates {
    limiters: Mutex<HashMap<Rate, Arc<DefaultKeyedRateLimiter<String>>>>,
}

/// Above this many keys a limiter forgets the idle ones.
const MAX_KEYS: usize = 100_000;

#[async_trait]
impl RateStore for LocalRates {
    async fn take_n(&self, key: &str, rate: Rate, n: u32) -> Result<Option<Duration>, String> {
        let limiter = {
            let mut limiters = self.limiters.lock().map_err(|e| e.to_string())?;
            limiters
                .entry(rate)
                .or_insert_with(|| {
                    let quota = Quota::with_period(rate.interval)
                        .unwrap_or_else(|| Quota::per_second(NonZeroU32::MAX))
                        .allow_burst(rate.burst);
                    Arc::new(RateLimiter::keyed(quota))
                })
                .clone()
        };
        if limiter.len() > MAX_KEYS {
            limiter.retain_recent();
        }
        let n = NonZeroU32::new(n.min(rate.burst.get())).unwrap_or(NonZeroU32::MIN);
        Ok(match limiter.check_key_n(&key.to_owned(), n) {
            Ok(Ok(())) => None,
            Ok(Err(not_until)) => Some(not_until.wait_time_from(DefaultClock::default().now())),
            // Unreachable: `n` is at most the burst.
            Err(_) => Some(rate.interval),
        })
    }
}

/// GCRA: the key holds the theoretical arrival time (µs, Redis's clock). An action of
/// weight n moves it n intervals on, and is allowed when the new arrival time is at most
/// `burst` intervals ahead of now; the key
/// expires when the budget is full again.
const GCRA: &str = r"
local now = redis.call('TIME')
local t = tonumber(now[1]) * 1000000 + tonumber(now[2])
local interval = tonumber(ARGV[1])
local limit = interval * tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or t)
if tat < t then tat = t end
local new = tat + interval * tonumber(ARGV[3])
if new - t > limit then return new - t - limit end
redis.call('SET', KEYS[1], string.format('%d', new), 'PX', math.ceil((new - t) / 1000))
return 0
";

/// In Redis, under the deployment's key prefix: every API instance shares one budget.
pub struct RedisRates {
    conn: ConnectionManager,
    prefix: String,
    script: redis::Script,
}

impl RedisRates {
    pub async fn connect(url: &str, prefix: &str) -> Result<Self, String> {
        Ok(Self::on(crate::redis_conn::connection(url).await?, prefix))
    }

    /// On a connection the caller also uses for other keys.
    pub fn on(conn: ConnectionManager, prefix: &str) -> Self {
        RedisRates {
            conn,
            prefix: prefix.to_owned(),
            script: redis::Script::new(GCRA),
        }
    }
}

#[async_trait]
impl RateStore for RedisRates {
    async fn take_n(&self, key: &str, rate: Rate, n: u32) -> Result<Option<Duration>, String> {
        let wait_us: u64 = self
            .script
            .key(format!("{}:limit:{key}", self.prefix))
            .arg(u64::try_from(rate.interval.as_micros()).unwrap_or(u64::MAX))
            .arg(rate.burst.get())
            .arg(n.clamp(1, rate.burst.get()))
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(|e| e.to_string())?;
        Ok((wait_us > 0).then(|| Duration::from_micros(wait_us)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_local_budget_allows_the_burst_then_refuses_with_the_wait() {
        let rates = LocalRates::default();
        let rate = Rate::new(1, Duration::from_secs(10), 3).unwrap();
        for _ in 0..3 {
            assert_eq!(rates.take("u1", rate).await.unwrap(), None);
        }
        let wait = rates.take("u1", rate).await.unwrap().unwrap();
        assert!(
            wait > Duration::from_secs(8) && wait <= Duration::from_secs(10),
            "{wait:?}"
        );
        // Another key has its own budget.
        assert_eq!(rates.take("u2", rate).await.unwrap(), None);
        assert_eq!(Rate::new(0, Duration::from_secs(1), 5), None);
    }
}
