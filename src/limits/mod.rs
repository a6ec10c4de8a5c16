//! What one user (tenant) may take of the platform: submission and order rates, tasks in
//! flight, ticket issue, open live streams. Each limit comes from `[limits]`, overridden
//! per user by an admin ([`overrides`]). Rates are counted in Redis (GCRA, shared by every
//! API instance) when the dedupe store is Redis, else in this process ([`rate`]); the
//! in-flight cap is checked inside the submission's transaction (see the AI-task store);
//! open streams are counted per instance ([`streams`]). A refusal is a 429 with
//! `Retry-After` and a code naming the limit.

pub mod overrides;
pub mod rate;
pub mod streams;

use std::sync::Arc;
use std::time::Duration;

use sea_orm::DatabaseConnection;

use crate::config::{DedupeKind, LimitSettings, Settings};
use crate::error::ApiError;
pub use overrides::Overrides;
use rate::{Rate, RateStore};
pub use streams::StreamPermit;

/// A rate-limited action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Submit,
    Order,
    Ticket,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Submit => "submit",
            Action::Order => "order",
            Action::Ticket => "ticket",
        }
    }

    /// The action's rate under `limits`; `None` when it is off.
    fn rate(self, limits: &LimitSettings) -> Option<Rate> {
        let (count, per, burst) = match self {
            Action::Submit => (
                limits.submits_per_sec,
                Duration::from_secs(1),
                limits.submit_burst,
            ),
            Action::Order => (
                limits.orders_per_sec,
                Duration::from_secs(1),
                limits.order_burst,
            ),
            Action::Ticket => (
                limits.tickets_per_min,
                Duration::from_secs(60),
                limits.tickets_per_min,
            ),
        };
        Rate::new(count, per, burst)
    }
}

/// The per-user limits of one process.
#[derive(Clone)]
pub struct Limits {
    inner: Arc<Inner>,
}

struct Inner {
    defaults: LimitSettings,
    db: DatabaseConnection,
    rates: Box<dyn RateStore>,
    overrides: overrides::Cache,
    streams: streams::Open,
}

impl Limits {
    /// Rates in Redis when the dedupe store is Redis (so every instance shares them),
    /// else in this process.
    pub async fn connect(settings: &Settings, db: DatabaseConnection) -> anyhow::Result<Self> {
        let rates: Box<dyn RateStore> = match settings.dedupe.kind {
            DedupeKind::Redis => Box::new(
                rate::RedisRates::connect(&settings.dedupe.url, &settings.dedupe.key_prefix)
                    .await
                    .map_err(|e| anyhow::anyhow!("limits: connecting to Redis: {e}"))?,
            ),
            DedupeKind::Embedded => Box::new(rate::LocalRates::default()),
        };
        Ok(Self::with(settings.limits, db, rates))
    }

    fn with(defaults: LimitSettings, db: DatabaseConnection, rates: Box<dyn RateStore>) -> Self {
        Limits {
            inner: Arc::new(Inner {
                defaults,
                db,
                rates,
                overrides: overrides::Cache::default(),
                streams: streams::Open::default(),
            }),
        }
    }

    /// The user's limits: the configured ones with the admin's overrides applied. Read
    /// through a short cache, so a change reaches other instances within seconds.
    pub async fn of(&self, user_id: &str) -> LimitSettings {
        let o = self.inner.overrides.get(&self.inner.db, user_id).await;
        o.apply(self.inner.defaults)
    }

    /// Drops the cached overrides of `user_id` (after an admin changed them here).
    pub fn forget(&self, user_id: &str) {
        self.inner.overrides.forget(user_id);
    }

    /// Takes one `action` from the user's budget, or refuses with 429; the user's limits
    /// it read, for the caller's other checks. A rate store that cannot answer (Redis
    /// away) lets the action through: a limit must not take the API down with it.
    pub async fn take(&self, action: Action, user_id: &str) -> Result<LimitSettings, ApiError> {
        let limits = self.of(user_id).await;
        let Some(rate) = action.rate(&limits) else {
            return Ok(limits);
        };
        match self
            .inner
            .rates
            .take(&format!("{}:{user_id}", action.as_str()), rate)
            .await
        {
            Ok(None) => Ok(limits),
            Ok(Some(wait)) => {
                metrics::counter!("conveyor_limit_refusals_total", "limit" => action.as_str())
                    .increment(1);
                Err(ApiError::TooManyRequests {
                    code: "rate_limited",
                    message: format!(
                        "too many {} requests for this account; retry in {} ms",
                        action.as_str(),
                        wait.as_millis()
                    ),
                    retry_after_secs: wait.as_secs_f64().ceil().max(1.0) as u64,
                })
            }
            Err(e) => {
                metrics::counter!("conveyor_limit_errors_total", "limit" => action.as_str())
                    .increment(1);
                tracing::warn!(error = %e, action = action.as_str(), "rate limit store unavailable; letting the request through");
                Ok(limits)
            }
        }
    }

    /// A permit for one more open stream (WebSocket or SSE), held while it is open; 429
    /// over the user's cap.
    pub async fn open_stream(&self, user_id: &str) -> Result<StreamPermit, ApiError> {
        let cap = self.of(user_id).await.streams_per_user;
        self.inner.streams.open(user_id, cap).ok_or_else(|| {
            metrics::counter!("conveyor_limit_refusals_total", "limit" => "streams").increment(1);
            ApiError::TooManyRequests {
                code: "too_many_streams",
                message: format!(
                    "this account already has {cap} open streams on this server; close one first"
                ),
                retry_after_secs: 5,
            }
        })
    }
}

/// The 429 of a submission over the in-flight cap.
pub fn in_flight_refusal(limit: u32) -> ApiError {
    metrics::counter!("conveyor_limit_refusals_total", "limit" => "tasks_in_flight").increment(1);
    ApiError::TooManyRequests {
        code: "too_many_tasks_in_flight",
        message: format!(
            "this account already has {limit} tasks pending or running; wait for some to finish"
        ),
        retry_after_secs: 5,
    }
}
