//! Plans: what a tenant gets for what it pays. Each plan (`[plans.<name>]`,
//! [`settings`]) sets limits of `[limits]`, the task kinds it may submit, its weight in
//! a contended lane (the rule: [`share`]), its storage quota and upload size. A user's
//! [`standing`] says whose share they count against (their organisation, else
//! themselves) and which plan applies; it is read through a short cache that
//! [`notices`] clear on every instance the moment a plan changes (a membership bought,
//! an admin's choice, an organisation's members).

pub mod notices;
pub mod settings;
pub mod share;
pub mod standing;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

pub use settings::{FREE, PlanSettings};
pub use standing::{Standing, Why};

use crate::users::User;

/// The plans of this deployment, by name; `free` is always there.
#[derive(Debug, Clone)]
pub struct Plans {
    by_name: BTreeMap<String, PlanSettings>,
    fallback: PlanSettings,
}

impl Plans {
    pub fn new(configured: &BTreeMap<String, PlanSettings>) -> Self {
        let mut by_name = configured.clone();
        by_name.entry(FREE.to_owned()).or_default();
        let fallback = by_name.get(FREE).cloned().unwrap_or_default();
        Plans { by_name, fallback }
    }

    /// The plan of that name; `free`'s for a name no longer configured (a plan removed
    /// from the configuration gives what `free` gives).
    pub fn get(&self, name: &str) -> &PlanSettings {
        self.by_name.get(name).unwrap_or(&self.fallback)
    }

    pub fn known(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The configured plans' names (`free` among them).
    pub fn names(&self) -> Vec<&str> {
        self.by_name.keys().map(String::as_str).collect()
    }

    /// Why `plan` (an admin's choice; `None` clears it) cannot be chosen: it is not a
    /// configured plan (the message names those that are).
    pub fn unknown(&self, plan: Option<&str>) -> Option<String> {
        let p = plan.filter(|p| !self.known(p))?;
        let known: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
        Some(format!("unknown plan `{p}`; plans: {}", known.join(", ")))
    }

    /// Whether plans of different weights exist: else weights never divide a lane.
    pub fn weights_differ(&self) -> bool {
        let mut weights = self.by_name.values().map(|p| p.weight);
        let first = weights.next();
        weights.any(|w| Some(w) != first)
    }

    /// The plan a bought membership grants when the product names none.
    pub fn membership(&self) -> Option<&str> {
        self.by_name
            .iter()
            .find(|(_, p)| p.membership)
            .map(|(n, _)| n.as_str())
    }

    /// The plans that may submit `kind`, for a refusal to name.
    pub fn allowing(&self, kind: &str) -> Vec<String> {
        self.by_name
            .iter()
            .filter(|(_, p)| p.allows(kind))
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// A user's own plan, and why: an admin's choice, else an active membership's, else
    /// `free`.
    pub fn of_user(&self, user: &User, now: DateTime<Utc>) -> (String, Why) {
        if let Some(plan) = user.plan.as_deref().filter(|p| self.known(p)) {
            return (plan.to_owned(), Why::Admin);
        }
        if user.member_until.is_some_and(|until| until > now) {
            let granted = user
                .member_plan
                .as_deref()
                .filter(|p| self.known(p))
                .or_else(|| self.membership());
            if let Some(plan) = granted {
                return (plan.to_owned(), Why::Membership);
            }
        }
        (FREE.to_owned(), Why::Default)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn user() -> User {
        User {
            id: "u".into(),
            name: "u".into(),
            credits: 0,
            is_admin: false,
            created_at: Utc::now(),
            member_until: None,
            org_id: None,
            plan: None,
            member_plan: None,
        }
    }

    fn plans() -> Plans {
        let mut p = BTreeMap::new();
        p.insert(
            "member".to_owned(),
            PlanSettings {
                weight: 4,
                membership: true,
                ..Default::default()
            },
        );
        p.insert("pro".to_owned(), PlanSettings::default());
        Plans::new(&p)
    }

    #[test]
    fn an_admins_choice_wins_then_an_active_membership_then_free() {
        let plans = plans();
        let now = Utc::now();
        let mut u = user();
        assert_eq!(plans.of_user(&u, now), ("free".into(), Why::Default));
        u.member_until = Some(now + chrono::Duration::days(30));
        assert_eq!(plans.of_user(&u, now), ("member".into(), Why::Membership));
        u.member_plan = Some("pro".into());
        assert_eq!(plans.of_user(&u, now), ("pro".into(), Why::Membership));
        u.member_until = Some(now - chrono::Duration::days(1));
        assert_eq!(plans.of_user(&u, now), ("free".into(), Why::Default));
        u.plan = Some("member".into());
        assert_eq!(plans.of_user(&u, now), ("member".into(), Why::Admin));
        // A plan no longer configured is ignored.
        u.plan = Some("gone".into());
        assert_eq!(plans.of_user(&u, now).0, "free");
        assert_eq!(plans.get("gone"), plans.get("free"));
    }
}
