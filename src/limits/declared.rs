//! Limits as data. The module that enforces a limit declares it ([`Limit`]: its key in
//! `[limits]` and in admins' per-user overrides, its default, what it bounds), so this
//! module knows no business action: the composition root collects every declaration,
//! `[limits]` and overrides may only name declared keys, and the docs list them.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::ConfigError;

/// A per-tenant limit; 0 turns it off.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// Its key in `[limits]` and in overrides (`submits_per_sec`).
    pub key: &'static str,
    pub default: u32,
    /// What it bounds, for operators (`conveyor users limits`, the docs).
    pub about: &'static str,
    /// How much of it a tenant holds now, for a cap on things held (tasks in flight),
    /// shown by `GET /v1/me`; `None` for rates and caps counted elsewhere.
    pub used: Option<Used>,
}

impl Limit {
    /// A limit on a rate or on a cap counted elsewhere (nothing shown as held).
    pub const fn new(key: &'static str, default: u32, about: &'static str) -> Self {
        Limit {
            key,
            default,
            about,
            used: None,
        }
    }

    /// Counts how much of it a tenant holds (a cap on things held), for `GET /v1/me`.
    pub const fn used(mut self, used: Used) -> Self {
        self.used = Some(used);
        self
    }
}

/// Counts what a tenant holds of a cap.
pub type Used = for<'a> fn(
    &'a sea_orm::DatabaseConnection,
    &'a str,
) -> futures::future::BoxFuture<'a, Result<u64, sea_orm::DbErr>>;

/// A rate: `count` actions per `per`, with `burst` at once above it (`count` when none).
#[derive(Debug, Clone, Copy)]
pub struct RateLimit {
    /// The action, in refusals and the `limit` label of metrics (`submit`).
    pub action: &'static str,
    pub count: Limit,
    pub per: Duration,
    pub burst: Option<Limit>,
}

impl RateLimit {
    /// `count` actions per `per`, with no burst above it.
    pub const fn new(action: &'static str, count: Limit, per: Duration) -> Self {
        RateLimit {
            action,
            count,
            per,
            burst: None,
        }
    }

    /// Allows `burst` actions at once above the sustained rate.
    pub const fn burst(mut self, burst: Limit) -> Self {
        self.burst = Some(burst);
        self
    }
}

/// The largest value a limit may be set to (a million a second is "unlimited" for any
/// tenant; 0 turns a limit off).
pub const MAX_VALUE: u32 = 1_000_000;

/// The limit's configured value: `[limits]`, else its declared default.
pub fn configured(limits: &BTreeMap<String, u32>, limit: &Limit) -> u32 {
    limits.get(limit.key).copied().unwrap_or(limit.default)
}

/// `[limits]` names only declared limits, each at most [`MAX_VALUE`].
pub fn check(limits: &BTreeMap<String, u32>, declared: &[Limit]) -> Result<(), ConfigError> {
    for (key, value) in limits {
        if !declared.iter().any(|l| l.key == key) {
            let known: Vec<&str> = declared.iter().map(|l| l.key).collect();
            return Err(ConfigError::Invalid {
                key: "limits",
                problem: format!("unknown limit `{key}`; known: {}", known.join(", ")),
            });
        }
        if *value > MAX_VALUE {
            return Err(ConfigError::Invalid {
                key: "limits",
                problem: format!("limits.{key} must be at most {MAX_VALUE}"),
            });
        }
    }
    Ok(())
}

/// Every declared limit off (benchmarks of the platform's own throughput).
pub fn unlimited(declared: &[Limit]) -> BTreeMap<String, u32> {
    declared.iter().map(|l| (l.key.to_owned(), 0)).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const A: Limit = Limit::new("a_per_sec", 5, "a");

    #[test]
    fn configured_values_override_defaults_and_unknown_keys_are_refused() {
        let mut limits = BTreeMap::new();
        assert_eq!(configured(&limits, &A), 5);
        limits.insert("a_per_sec".into(), 9);
        assert_eq!(configured(&limits, &A), 9);
        assert!(check(&limits, &[A]).is_ok());
        limits.insert("typo".into(), 1);
        let err = check(&limits, &[A]).unwrap_err().to_string();
        assert!(err.contains("typo") && err.contains("a_per_sec"), "{err}");
        limits.remove("typo");
        limits.insert("a_per_sec".into(), MAX_VALUE + 1);
        assert!(check(&limits, &[A]).is_err());
    }
}
