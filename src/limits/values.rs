//! A tenant's value of a limit: `[limits]` (else the declared default), then its plan's,
//! then an admin's override for the tenant (read through a short cache). What every
//! process that enforces a limit reads: the API's [`super::Limits`] and the consumers'
//! fair share at claim time.

use std::collections::BTreeMap;
use std::sync::Arc;

use sea_orm::DatabaseConnection;

use super::declared::{self, Limit};
use super::overrides::{self, Overrides};
use crate::plans::{PlanSettings, Plans};

#[derive(Clone)]
pub struct Values(Arc<Inner>);

struct Inner {
    /// `[limits]` as configured (keys checked at start-up).
    configured: BTreeMap<String, u32>,
    db: DatabaseConnection,
    plans: Arc<Plans>,
    overrides: overrides::Cache,
}

/// A limit's value: the admin's override, else the plan's, else `configured`.
pub fn layered(limit: &Limit, configured: u32, plan: &PlanSettings, o: &Overrides) -> u32 {
    o.value(
        limit,
        plan.limits.get(limit.key).copied().unwrap_or(configured),
    )
}

impl Values {
    pub fn new(configured: BTreeMap<String, u32>, db: DatabaseConnection, plans: Plans) -> Self {
        Values(Arc::new(Inner {
            configured,
            db,
            plans: Arc::new(plans),
            overrides: overrides::Cache::default(),
        }))
    }

    /// The plans of this deployment.
    pub fn plans(&self) -> &Arc<Plans> {
        &self.0.plans
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.0.db
    }

    /// `limit` as `[limits]` sets it, else its declared default.
    pub fn configured(&self, limit: &Limit) -> u32 {
        declared::configured(&self.0.configured, limit)
    }

    /// The value of `limit` for `tenant` on `plan`.
    pub async fn of(&self, limit: &Limit, tenant: &str, plan: &str) -> u32 {
        let o = self.overrides(tenant).await;
        layered(limit, self.configured(limit), self.0.plans.get(plan), &o)
    }

    /// The tenant's overrides, through the cache (none when the database cannot say).
    pub async fn overrides(&self, tenant: &str) -> Arc<Overrides> {
        self.0.overrides.get(&self.0.db, tenant).await
    }

    /// Drops the cached overrides of a tenant (an admin changed them here).
    pub fn forget(&self, tenant: &str) {
        self.0.overrides.forget(tenant);
    }
}
