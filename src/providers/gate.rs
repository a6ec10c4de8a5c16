//! A provider's gate, shared by the whole fleet: its requests and tokens per minute
//! (GCRAs in Redis, one atomic script each, so four consumer processes together keep
//! the provider's quota; in this process on the embedded backend) and its pause. A 429 that says when
//! to come back (`Retry-After`, or `x-ratelimit-reset-requests`) pauses the provider for
//! every process until then; calls wait for the pause instead of spending requests that
//! would be refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::ConnectionManager;
use tokio_util::sync::CancellationToken;

use super::ExecError;
use super::fleet_slots::{FleetPlace, FleetSlots};
use crate::dedupe::settings::{DedupeKind, DedupeSettings};
use crate::limits::rate::{LocalRates, Rate, RateStore, RedisRates};

/// Where pauses are kept.
enum Pauses {
    Redis {
        conn: ConnectionManager,
        prefix: String,
    },
    Local(Mutex<HashMap<String, tokio::time::Instant>>),
}

/// The budgets and pauses of every provider of this process.
pub struct Gates {
    rates: Arc<dyn RateStore>,
    pauses: Pauses,
}

impl Gates {
    /// Shared through Redis when the dedupe store is Redis (the real fleet), else local;
    /// one connection for budgets and pauses.
    pub async fn connect(dedupe: &DedupeSettings) -> anyhow::Result<Arc<Gates>> {
        Ok(Arc::new(match dedupe.kind {
            DedupeKind::Redis => {
                let conn = crate::redis_conn::connection(&dedupe.url)
                    .await
                    .map_err(anyhow::Error::msg)?;
                Gates {
                    rates: Arc::new(RedisRates::on(conn.clone(), &dedupe.key_prefix)),
                    pauses: Pauses::Redis {
                        conn,
                        prefix: dedupe.key_prefix.clone(),
                    },
                }
            }
            DedupeKind::Embedded => Gates::local(),
        }))
    }

    /// This process only.
    pub fn local() -> Gates {
        Gates {
            rates: Arc::new(LocalRates::default()),
            pauses: Pauses::Local(Mutex::default()),
        }
    }

    /// The gate of provider `name`, with `per_minute` requests and `tokens_per_minute`
    /// tokens (0: no budget).
    pub fn gate(self: &Arc<Self>, name: &str, per_minute: u32, tokens_per_minute: u32) -> Gate {
        Gate {
            gates: self.clone(),
            name: name.to_owned(),
            key: format!("provider:{name}"),
            rate: Rate::new(per_minute, Duration::from_secs(60), 1),
            // Ten seconds' worth at once: a burst the provider's own bucket (a minute's
            // worth) always takes, smoothing the rest.
            tokens: Rate::new(
                tokens_per_minute,
                Duration::from_secs(60),
                tokens_per_minute / 6,
            ),
            places: None,
        }
    }

    /// The fleet's places at provider `name`: `cap` at once (0: no cap).
    fn places(&self, key: &str, cap: u32) -> Option<FleetSlots> {
        if cap == 0 {
            return None;
        }
        Some(match &self.pauses {
            Pauses::Local(_) => FleetSlots::local(cap),
            Pauses::Redis { conn, prefix } => {
                FleetSlots::redis(conn.clone(), format!("{prefix}:places:{key}"), cap)
            }
        })
    }

    /// How long `key` is paused from now, if it is.
    async fn paused(&self, key: &str) -> Option<Duration> {
        match &self.pauses {
            Pauses::Local(map) => {
                let until = *map.lock().ok()?.get(key)?;
                until.checked_duration_since(tokio::time::Instant::now())
            }
            Pauses::Redis { conn, prefix } => {
                let ms: Option<i64> = redis::cmd("PTTL")
                    .arg(format!("{prefix}:pause:{key}"))
                    .query_async(&mut conn.clone())
                    .await
                    .ok();
                // PTTL: -2 no key, -1 no expiry (never set so), else milliseconds left.
                ms.filter(|&ms| ms > 0)
                    .map(|ms| Duration::from_millis(ms.unsigned_abs()))
            }
        }
    }

    async fn pause(&self, key: &str, d: Duration) {
        match &self.pauses {
            Pauses::Local(map) => {
                if let Ok(mut m) = map.lock() {
                    let until = tokio::time::Instant::now() + d;
                    let e = m.entry(key.to_owned()).or_insert(until);
                    *e = (*e).max(until);
                }
            }
            Pauses::Redis { conn, prefix } => {
                let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1);
                // A longer pause already set wins (GT: only if the new expiry is later).
                let set: Result<(), _> = redis::pipe()
                    .cmd("SET")
                    .arg(format!("{prefix}:pause:{key}"))
                    .arg(1)
                    .arg("NX")
                    .arg("PX")
                    .arg(ms)
                    .ignore()
                    .cmd("PEXPIRE")
                    .arg(format!("{prefix}:pause:{key}"))
                    .arg(ms)
                    .arg("GT")
                    .ignore()
                    .query_async(&mut conn.clone())
                    .await;
                if let Err(e) = set {
                    tracing::warn!(error = %e, "recording a provider pause");
                }
            }
        }
    }
}

/// One provider's share of [`Gates`].
pub struct Gate {
    gates: Arc<Gates>,
    /// The `[ai.providers]` name (metrics' `provider` label).
    name: String,
    key: String,
    rate: Option<Rate>,
    tokens: Option<Rate>,
    places: Option<FleetSlots>,
}

impl Gate {
    /// The provider's `[ai.providers]` name.
    pub fn provider(&self) -> &str {
        &self.name
    }

    /// At most `cap` calls in flight at this provider across the fleet (0: no cap).
    pub fn with_fleet_cap(mut self, cap: u32) -> Gate {
        self.places = self.gates.places(&self.key, cap);
        self
    }

    /// A place among the fleet's calls in flight, held for the whole call (a stream's
    /// included); waits while the cap is full. `None`: no cap.
    pub async fn place(&self, cancel: &CancellationToken) -> Result<Option<FleetPlace>, ExecError> {
        match &self.places {
            None => Ok(None),
            Some(p) => p.take(cancel).await.map(Some),
        }
    }

    /// Waits until the provider is not paused and its budgets have room, then takes one
    /// request and `tokens` tokens.
    pub async fn ready(&self, tokens: usize, cancel: &CancellationToken) -> Result<(), ExecError> {
        loop {
            let wait = match self.gates.paused(&self.key).await {
                Some(d) => Some(d),
                None => self.take(&self.key, self.rate, 1).await,
            };
            let Some(wait) = wait else { break };
            sleep(wait, cancel).await?;
        }
        let key = format!("{}:tokens", self.key);
        let n = u32::try_from(tokens).unwrap_or(u32::MAX);
        while n > 0
            && let Some(wait) = self.take(&key, self.tokens, n).await
        {
            sleep(wait, cancel).await?;
        }
        Ok(())
    }

    /// Takes `n` from a budget: how long to wait first, if it has no room.
    async fn take(&self, key: &str, rate: Option<Rate>, n: u32) -> Option<Duration> {
        match self.gates.rates.take_n(key, rate?, n).await {
            Ok(w) => w,
            // A budget store that is away does not stop the work: the provider's own
            // 429s still slow it.
            Err(e) => {
                tracing::warn!(error = %e, "provider budget unavailable");
                None
            }
        }
    }

    /// Pauses the provider for the whole fleet for `d`.
    pub async fn pause(&self, d: Duration) {
        self.gates.pause(&self.key, d).await;
    }
}

async fn sleep(d: Duration, cancel: &CancellationToken) -> Result<(), ExecError> {
    tokio::select! {
        _ = cancel.cancelled() => Err(ExecError::Canceled),
        _ = tokio::time::sleep(d) => Ok(()),
    }
}

/// When a 429 says to come back: `Retry-After` in seconds (or an HTTP date, not used by
/// the providers we speak to), else OpenAI's `x-ratelimit-reset-requests` (`1s`, `6m0s`,
/// `120ms`).
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(secs) = header("retry-after").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64(secs.clamp(0.0, 3600.0)));
    }
    header("x-ratelimit-reset-requests").and_then(parse_reset)
}

/// `6m0s`, `1.5s`, `120ms` → a duration.
fn parse_reset(s: &str) -> Option<Duration> {
    let mut total = 0.0f64;
    let mut num = String::new();
    let mut chars = s.trim().chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let value: f64 = num.parse().ok()?;
        num.clear();
        let unit = match c {
            'h' => 3600.0,
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                0.001
            }
            'm' => 60.0,
            's' => 1.0,
            _ => return None,
        };
        total += value * unit;
        any = true;
    }
    (any && num.is_empty()).then(|| Duration::from_secs_f64(total.min(3600.0)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reset_headers_read_as_durations() {
        assert_eq!(parse_reset("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(parse_reset("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_reset("120ms"), Some(Duration::from_millis(120)));
        assert_eq!(parse_reset("abc"), None);
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "3".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
    }

    #[tokio::test]
    async fn a_local_pause_holds_every_caller() {
        let gates = Arc::new(Gates::local());
        let (a, b) = (gates.gate("p", 0, 0), gates.gate("p", 0, 0));
        a.pause(Duration::from_millis(300)).await;
        let t = tokio::time::Instant::now();
        b.ready(0, &CancellationToken::new()).await.unwrap();
        assert!(
            t.elapsed() >= Duration::from_millis(250),
            "{:?}",
            t.elapsed()
        );
    }
}
