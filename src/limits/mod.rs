//! What one tenant (an organisation, else a user alone) may take of the platform. The
//! limits themselves are data declared by the modules that enforce them ([`declared`]: a
//! key, a default, a rate's period); this module counts and answers, and names no
//! business action. Each value comes from `[limits]` (else the declared default), then the
//! tenant's plan ([`crate::plans`]), then an admin's per-tenant override ([`overrides`]);
//! every member and every key of a tenant count together, so splitting work over keys or
//! members gains nothing. Rates are counted in Redis (GCRA, shared by every API instance) when
//! the dedupe store is Redis, else in this process ([`rate`]); caps on things held open
//! (live streams, uploads) are counted per instance ([`streams`]). A refusal is a 429 with
//! `Retry-After` and a code naming the limit.

pub mod declared;
pub mod overrides;
pub mod rate;
pub mod streams;
pub mod values;

use std::collections::BTreeMap;
use std::sync::Arc;

use sea_orm::DatabaseConnection;

use crate::dedupe::settings::{DedupeKind, DedupeSettings};
use crate::plans::Plans;
use crate::plans::standing::{self, Standing};

use crate::error::ApiError;
pub use declared::{Limit, MAX_VALUE, RateLimit};
pub use overrides::Overrides;
use rate::{Rate, RateStore};
pub use streams::StreamPermit;
pub use values::{Values, layered};

/// The per-user limits of one process.
#[derive(Clone)]
pub struct Limits {
    inner: Arc<Inner>,
}

struct Inner {
    /// Every limit of this build, as declared.
    declared: Vec<Limit>,
    values: Values,
    db: DatabaseConnection,
    rates: Box<dyn RateStore>,
    standings: standing::Cache,
    streams: streams::Open,
}

/// A tenant's limits: configured, set by its plan, overridden, in effect (by key).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct UserLimits {
    /// The plan that applies.
    pub plan: String,
    /// Whose limits these are: the organisation, else the user.
    pub tenant_id: String,
    pub configured: BTreeMap<String, u32>,
    /// What the plan sets otherwise.
    #[schema(value_type = std::collections::BTreeMap<String, u32>)]
    pub plan_limits: BTreeMap<String, u32>,
    pub overrides: Overrides,
    pub effective: BTreeMap<String, u32>,
}

impl Limits {
    /// Rates in Redis when the dedupe store is Redis (so every instance shares them),
    /// else in this process; values from `values` (the process's: the consumers read the
    /// same).
    pub async fn connect(
        dedupe: &DedupeSettings,
        values: Values,
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
        Ok(Limits {
            inner: Arc::new(Inner {
                declared,
                db: values.db().clone(),
                values,
                rates,
                standings: standing::Cache::default(),
                streams: streams::Open::default(),
            }),
        })
    }

    /// Every limit of this build.
    pub fn declared(&self) -> &[Limit] {
        &self.inner.declared
    }

    /// The plans of this deployment.
    pub fn plans(&self) -> &Arc<Plans> {
        self.inner.values.plans()
    }

    /// The user's tenant and plan, read through a short cache that plan notices clear.
    pub async fn standing(&self, user_id: &str) -> Arc<Standing> {
        self.inner
            .standings
            .get(&self.inner.db, self.plans(), user_id)
            .await
    }

    /// The user's value of `limit`: configured, the plan's, or the admin's override for
    /// the user's tenant. Read through short caches, so a change reaches other instances
    /// within seconds (at once where a notice tells them).
    pub async fn value(&self, limit: &Limit, user_id: &str) -> u32 {
        let s = self.standing(user_id).await;
        self.value_for(limit, &s).await
    }

    /// [`Limits::value`] for a standing the caller holds.
    pub async fn value_for(&self, limit: &Limit, s: &Standing) -> u32 {
        self.inner.values.of(limit, &s.tenant_id, &s.plan).await
    }

    /// The limits of `user_id`'s tenant, all of them (the admin view and `GET /v1/me`).
    pub async fn of(&self, user_id: &str) -> Result<UserLimits, sea_orm::DbErr> {
        let s = standing::resolve(&self.inner.db, self.plans(), user_id).await?;
        self.of_tenant(&s.tenant_id, &s.plan).await
    }

    /// The limits of a tenant on `plan`.
    pub async fn of_tenant(
        &self,
        tenant_id: &str,
        plan: &str,
    ) -> Result<UserLimits, sea_orm::DbErr> {
        let overrides = overrides::load(&self.inner.db, tenant_id).await?;
        let configured: BTreeMap<String, u32> = self
            .inner
            .declared
            .iter()
            .map(|l| (l.key.to_owned(), self.inner.values.configured(l)))
            .collect();
        let plan_limits = self.plans().get(plan).limits.clone();
        let mut effective = configured.clone();
        effective.extend(plan_limits.iter().map(|(k, v)| (k.clone(), *v)));
        effective.extend(overrides.0.iter().map(|(k, v)| (k.clone(), *v)));
        Ok(UserLimits {
            plan: plan.to_owned(),
            tenant_id: tenant_id.to_owned(),
            configured,
            plan_limits,
            overrides,
            effective,
        })
    }

    /// What `tenant_id` holds of each cap that can say (`tasks_in_flight`, …), by key.
    pub async fn used(&self, tenant_id: &str) -> Result<BTreeMap<String, u64>, sea_orm::DbErr> {
        let mut used = BTreeMap::new();
        for l in &self.inner.declared {
            if let Some(count) = l.used {
                used.insert(l.key.to_owned(), count(&self.inner.db, tenant_id).await?);
            }
        }
        Ok(used)
    }

    /// Drops the cached overrides of a tenant (after an admin changed them here).
    pub fn forget(&self, tenant_id: &str) {
        self.inner.values.forget(tenant_id);
    }

    /// Drops every cached standing (a plan changed).
    pub fn forget_standings(&self) {
        self.inner.standings.clear();
    }

    /// Takes one action from the user's `rate` budget, or refuses with 429. A rate store
    /// that cannot answer (Redis away) lets the action through: a limit must not take the
    /// API down with it.
    pub async fn take(&self, rate: &RateLimit, user_id: &str) -> Result<(), ApiError> {
        let s = self.standing(user_id).await;
        self.take_for(rate, &s).await
    }

    /// [`Limits::take`] for a standing the caller holds: the tenant's budget.
    pub async fn take_for(&self, rate: &RateLimit, s: &Standing) -> Result<(), ApiError> {
        let count = self.value_for(&rate.count, s).await;
        let burst = match &rate.burst {
            Some(b) => self.value_for(b, s).await,
            None => count,
        };
        let Some(budget) = Rate::new(count, rate.per, burst) else {
            return Ok(());
        };
        let key = format!("{}:{}", rate.action, s.tenant_id);
        match self.inner.rates.take(&key, budget).await {
            Ok(None) => Ok(()),
            Ok(Some(wait)) => {
                metrics::counter!("conveyor_limit_refusals_total", "limit" => rate.action)
                    .increment(1);
                Err(ApiError::too_many(
                    "rate_limited",
                    format!(
                        "too many {} requests for this account; retry in {} ms",
                        rate.action,
                        wait.as_millis()
                    ),
                    wait.as_secs_f64().ceil().max(1.0) as u64,
                ))
            }
            Err(e) => {
                metrics::counter!("conveyor_limit_errors_total", "limit" => rate.action)
                    .increment(1);
                tracing::warn!(error = %e, action = rate.action, "rate limit store unavailable; letting the request through");
                Ok(())
            }
        }
    }

    /// A permit for one more thing held open under `cap` (a live stream, an upload),
    /// given back when dropped; `None` when the user holds its cap already on this
    /// instance. Each cap counts its own things.
    pub async fn hold(&self, cap: &Limit, user_id: &str) -> Option<StreamPermit> {
        let s = self.standing(user_id).await;
        let n = self.value_for(cap, &s).await;
        let permit = self
            .inner
            .streams
            .open(&format!("{}:{}", cap.key, s.tenant_id), n);
        if permit.is_none() {
            metrics::counter!("conveyor_limit_refusals_total", "limit" => cap.key).increment(1);
        }
        permit
    }
}

/// A 429 for a cap (not a rate) the caller checked itself: counted under the cap's key.
pub fn cap_refusal(cap: &Limit, code: &'static str, message: String) -> ApiError {
    metrics::counter!("conveyor_limit_refusals_total", "limit" => cap.key).increment(1);
    ApiError::too_many(code, message, 5)
}
