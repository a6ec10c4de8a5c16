//! `[plans.<name>]`: what each plan gives. `free` is everyone's plan until something
//! else applies (an admin's choice, a membership, an organisation's plan); the plan with
//! `membership = true` is what a bought membership grants unless the product names
//! another.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// The plan of everyone without another.
pub const FREE: &str = "free";

/// The highest weight a plan may have: a thousand to one is already "always first".
pub const MAX_WEIGHT: u32 = 1000;

/// One plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanSettings {
    /// For people: what the plan is.
    #[serde(default)]
    pub about: String,
    /// Its share of a contended lane against other plans' (weighted fair share at claim
    /// time): a tenant of weight 4 starts four tasks for each one of a tenant of weight 1
    /// while both wait.
    #[serde(default = "one")]
    pub weight: u32,
    /// The task kinds it may submit; empty: every kind.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Limits of `[limits]` it sets otherwise (`tasks_running = 16`); an admin's
    /// per-tenant override still wins.
    #[serde(default)]
    pub limits: BTreeMap<String, u32>,
    /// Bytes of stored files, in MiB (unset: `storage.quota_bytes`).
    #[serde(default)]
    pub storage_quota_mib: Option<u64>,
    /// The largest upload, in MiB, under each purpose's own limit (unset: those limits).
    #[serde(default)]
    pub upload_max_mib: Option<u64>,
    /// What a bought membership grants (one plan at most).
    #[serde(default)]
    pub membership: bool,
}

fn one() -> u32 {
    1
}

impl Default for PlanSettings {
    fn default() -> Self {
        PlanSettings {
            about: String::new(),
            weight: 1,
            kinds: Vec::new(),
            limits: BTreeMap::new(),
            storage_quota_mib: None,
            upload_max_mib: None,
            membership: false,
        }
    }
}

impl PlanSettings {
    /// Its storage quota in bytes; `configured` (`storage.quota_bytes`) when unset.
    pub fn storage_quota(&self, configured: u64) -> u64 {
        self.storage_quota_mib
            .map_or(configured, |m| m.saturating_mul(1024 * 1024))
    }

    /// The largest upload it may make of a purpose limited to `purpose_max` bytes.
    pub fn upload_max(&self, purpose_max: u64) -> u64 {
        self.upload_max_mib.map_or(purpose_max, |m| {
            purpose_max.min(m.saturating_mul(1024 * 1024))
        })
    }

    /// Whether it may submit tasks of `kind`.
    pub fn allows(&self, kind: &str) -> bool {
        self.kinds.is_empty() || self.kinds.iter().any(|k| k == kind)
    }
}

/// A plan's name: what admins type and payments products name.
pub fn valid_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// Checks a map of limit values (the limits module's rule: declared keys, in range).
pub type LimitsCheck<'a> = &'a dyn Fn(&BTreeMap<String, u32>) -> Result<(), ConfigError>;

/// Names, weights, one membership plan at most, and each plan's limits as `limits`
/// checks them.
pub fn check(
    plans: &BTreeMap<String, PlanSettings>,
    limits: LimitsCheck<'_>,
) -> Result<(), ConfigError> {
    let invalid = |problem: String| ConfigError::Invalid {
        key: "plans",
        problem,
    };
    for (name, plan) in plans {
        if !valid_name(name) {
            return Err(invalid(format!(
                "plan name `{name}`: 1 to 32 of a-z, 0-9, _ and -"
            )));
        }
        if !(1..=MAX_WEIGHT).contains(&plan.weight) {
            return Err(invalid(format!(
                "plans.{name}.weight must be 1 to {MAX_WEIGHT}"
            )));
        }
        limits(&plan.limits).map_err(|e| invalid(format!("plans.{name}.limits: {e}")))?;
        if plan.storage_quota_mib == Some(0) || plan.upload_max_mib == Some(0) {
            return Err(invalid(format!(
                "plans.{name}: storage_quota_mib and upload_max_mib must be above 0 when set"
            )));
        }
    }
    let members: Vec<&str> = plans
        .iter()
        .filter(|(_, p)| p.membership)
        .map(|(n, _)| n.as_str())
        .collect();
    if members.len() > 1 {
        return Err(invalid(format!(
            "one plan at most may have membership = true; found {}",
            members.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn no_limits(l: &BTreeMap<String, u32>) -> Result<(), ConfigError> {
        match l.keys().next() {
            Some(k) => Err(ConfigError::Invalid {
                key: "limits",
                problem: format!("unknown limit `{k}`"),
            }),
            None => Ok(()),
        }
    }

    #[test]
    fn names_weights_and_one_membership_plan_are_checked() {
        let mut plans = BTreeMap::new();
        plans.insert("free".to_owned(), PlanSettings::default());
        let member = PlanSettings {
            weight: 4,
            membership: true,
            ..Default::default()
        };
        plans.insert("member".to_owned(), member.clone());
        assert!(check(&plans, &no_limits).is_ok());
        plans.insert("team".to_owned(), member);
        assert!(
            check(&plans, &no_limits)
                .unwrap_err()
                .to_string()
                .contains("one plan at most")
        );
        plans.remove("team");
        plans.insert("Big Plan".to_owned(), PlanSettings::default());
        assert!(check(&plans, &no_limits).is_err());
        plans.remove("Big Plan");
        plans.insert(
            "heavy".to_owned(),
            PlanSettings {
                weight: 0,
                ..Default::default()
            },
        );
        assert!(
            check(&plans, &no_limits)
                .unwrap_err()
                .to_string()
                .contains("weight")
        );
        plans.remove("heavy");
        plans.insert(
            "odd".to_owned(),
            PlanSettings {
                limits: [("nope".to_owned(), 1)].into(),
                ..Default::default()
            },
        );
        assert!(
            check(&plans, &no_limits)
                .unwrap_err()
                .to_string()
                .contains("nope")
        );
    }

    #[test]
    fn an_empty_kind_list_allows_every_kind() {
        let all = PlanSettings::default();
        assert!(all.allows("video"));
        let some = PlanSettings {
            kinds: vec!["copywriting".into()],
            ..Default::default()
        };
        assert!(some.allows("copywriting") && !some.allows("video"));
    }
}
