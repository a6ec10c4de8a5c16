//! What one user (tenant) may take of the platform. The limits themselves are data
//! declared by the modules that enforce them ([`declared`]: a key, a default, a rate's
//! period); this module counts and answers, and names no business action. Each value
//! comes from `[limits]` (else the declared default), overridden per user by an admin
//! ([`overrides`]). Rates are counted in Redis (GCRA, shared by every API instance) when
//! the dedupe store is Redis, else in this process ([`rate`]); caps on things held open
//! (live streams) are counted per instance ([`streams`]). A refusal is a 429 with
//! `Retry-After` and a code naming the limit.

pub mod declared;
pub mod overrides;
pub mod rate;
pub mod streams;

use std::collections::BTreeMap;
use std::sync::Arc;

use sea_orm::DatabaseConnection;

use crate::dedupe::settings::{DedupeKind, DedupeSettings};

use crate::error::ApiError;
pub use declared::{Limit, MAX_VALUE, RateLimit};
pub use overrides::Overrides;
use rate::{Rate, RateStore};
pub use streams::StreamPermit;

/// The per-user limits of one process.
#[derive(Clone)]
pub struct Limits {
    inner: Arc<Inner>,
}

struct Inner {
    /// Every limit of this build, as declared.
    declared: Vec<Limit>,
    /// `[limits]` over the declared defaults, by key.
    configured: BTreeMap<&'static str, u32>,
    db: DatabaseConnection,
    rates: Box<dyn RateStore>,
    overrides: overrides::Cache,
    streams: streams::Open,
}

/// A user's limits: configured, overridden, in effect (by key).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct UserLimits {
    pub configured: BTreeMap<String, u32>,
    pub overrides: Overrides,
    pub effective: BTreeMap<String, u32>,
}

impl Limits {
    /// Rates in Redis when the dedupe store is Redis (so every instance shares them),
    /// else in this process.
    pub async fn connect(
        dedupe: &DedupeSettings,
        configured: &BTreeMap<String, u32>,
        db: DatabaseConnection,
        declared: Vec<Limit>,
    ) -> anyhow::Result<Self> {
        let rates: Box<dyn RateStore> = match dedupe.kind {
            DedupeKind::Redis => Box::new(
                rate::RedisRates::connect(&dedupe.url, &dedupe.key_prefix)
                    .await
                    .map_err(|e| anyhow::anyhow!("limits: connecting to Redis: {e}"))?,
            ),
            DedupeKind::Embedded => Box::new(rate::LocalRates::default()),
        };
        let configured = declared
            .iter()
            .map(|l| (l.key, declared::configured(configured, l)))
            .collect();
        Ok(Limits {
            inner: Arc::new(Inner {
                declared,
                configured,
                db,
                rates,
                overrides: overrides::Cache::default(),
                streams: streams::Open::default(),
            }),
        })
    }

    /// Every limit of this build.
    pub fn declared(&self) -> &[Limit] {
        &self.inner.declared
    }

    fn configured(&self, limit: &Limit) -> u32 {
        self.inner
            .configured
            .get(limit.key)
            .copied()
            .unwrap_or(limit.default)
    }

    /// The user's value of `limit`: configured, or the admin's override. Read through a
    /// short cache, so a change reaches other instances within seconds.
    pub async fn value(&self, limit: &Limit, user_id: &str) -> u32 {
        let o = self.inner.overrides.get(&self.inner.db, user_id).await;
        o.value(limit, self.configured(limit))
    }

    /// The user's limits, all of them (the admin view).
    pub async fn of(&self, user_id: &str) -> Result<UserLimits, sea_orm::DbErr> {
        let overrides = overrides::load(&self.inner.db, user_id).await?;
        let configured: BTreeMap<String, u32> = self
            .inner
            .configured
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect();
        let mut effective = configured.clone();
        effective.extend(overrides.0.iter().map(|(k, v)| (k.clone(), *v)));
        Ok(UserLimits {
            configured,
            overrides,
            effective,
        })
    }

    /// Drops the cached overrides of `user_id` (after an admin changed them here).
    pub fn forget(&self, user_id: &str) {
        self.inner.overrides.forget(user_id);
    }

    /// Takes one action from the user's `rate` budget, or refuses with 429. A rate store
    /// that cannot answer (Redis away) lets the action through: a limit must not take the
    /// API down with it.
    pub async fn take(&self, rate: &RateLimit, user_id: &str) -> Result<(), ApiError> {
        let o = self.inner.overrides.get(&self.inner.db, user_id).await;
        let count = o.value(&rate.count, self.configured(&rate.count));
        let burst = match &rate.burst {
            Some(b) => o.value(b, self.configured(b)),
            None => count,
        };
        let Some(budget) = Rate::new(count, rate.per, burst) else {
            return Ok(());
        };
        let key = format!("{}:{user_id}", rate.action);
        match self.inner.rates.take(&key, budget).await {
            Ok(None) => Ok(()),
            Ok(Some(wait)) => {
                metrics::counter!("conveyor_limit_refusals_total", "limit" => rate.action)
                    .increment(1);
                Err(ApiError::TooManyRequests {
                    code: "rate_limited",
                    message: format!(
                        "too many {} requests for this account; retry in {} ms",
                        rate.action,
                        wait.as_millis()
                    ),
                    retry_after_secs: wait.as_secs_f64().ceil().max(1.0) as u64,
                })
            }
            Err(e) => {
                metrics::counter!("conveyor_limit_errors_total", "limit" => rate.action)
                    .increment(1);
                tracing::warn!(error = %e, action = rate.action, "rate limit store unavailable; letting the request through");
                Ok(())
            }
        }
    }

    /// A permit for one more thing held open under `cap` (a live stream), given back
    /// when dropped; `None` when the user holds its cap already on this instance.
    pub async fn hold(&self, cap: &Limit, user_id: &str) -> Option<StreamPermit> {
        let n = self.value(cap, user_id).await;
        let permit = self.inner.streams.open(user_id, n);
        if permit.is_none() {
            metrics::counter!("conveyor_limit_refusals_total", "limit" => cap.key).increment(1);
        }
        permit
    }
}

/// A 429 for a cap (not a rate) the caller checked itself: counted under the cap's key.
pub fn cap_refusal(cap: &Limit, code: &'static str, message: String) -> ApiError {
    metrics::counter!("conveyor_limit_refusals_total", "limit" => cap.key).increment(1);
    ApiError::TooManyRequests {
        code,
        message,
        retry_after_secs: 5,
    }
}
