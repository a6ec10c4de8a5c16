//! A user's standing: the tenant they count against (their organisation, else
//! themselves) and the plan that applies, with why. Resolved from the user's row and
//! their organisation's, read through a short per-process cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use sea_orm::{ConnectionTrait, DbErr, EntityTrait};
use serde::Serialize;

use super::Plans;
use crate::users::entity::{org, user};

/// Why a plan applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// Nothing else applies: `free`.
    Default,
    /// An active membership (bought).
    Membership,
    /// An admin set it on the user.
    Admin,
    /// The user's organisation's (set on it, else its owner's); a member whose own plan
    /// weighs more keeps theirs (and its why).
    Organisation,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    pub user_id: String,
    /// Whose limits and share count this user's work: the organisation, else the user.
    pub tenant_id: String,
    pub org_id: Option<String>,
    pub plan: String,
    pub why: Why,
}

impl Standing {
    /// A user alone on `free`: what applies when the database cannot say.
    pub fn alone(user_id: &str) -> Self {
        Standing {
            user_id: user_id.to_owned(),
            tenant_id: user_id.to_owned(),
            org_id: None,
            plan: super::FREE.to_owned(),
            why: Why::Default,
        }
    }
}

/// Reads `user_id`'s standing; a user not found stands alone on `free`.
pub async fn resolve(
    db: &impl ConnectionTrait,
    plans: &Plans,
    user_id: &str,
) -> Result<Standing, DbErr> {
    let Some(u) = user::Entity::find_by_id(user_id.to_owned()).one(db).await? else {
        return Ok(Standing::alone(user_id));
    };
    let now = Utc::now();
    let org = match &u.org_id {
        Some(id) => org::Entity::find_by_id(id.clone()).one(db).await?,
        None => None,
    };
    let Some(org) = org else {
        let (plan, why) = plans.of_user(&u, now);
        return Ok(Standing {
            user_id: u.id.clone(),
            tenant_id: u.id,
            org_id: None,
            plan,
            why,
        });
    };
    let shared = org_plan(db, plans, &org, Some(&u)).await?;
    // A member's own plan (bought, or an admin's choice for them) stays theirs when it
    // weighs more than the organisation's: joining never downgrades what a member paid
    // for (issue 55). On a tie the organisation's applies.
    let (own, own_why) = plans.of_user(&u, now);
    let (plan, why) = if plans.get(&own).weight > plans.get(&shared).weight {
        (own, own_why)
    } else {
        (shared, Why::Organisation)
    };
    Ok(Standing {
        user_id: u.id,
        tenant_id: org.id.clone(),
        org_id: Some(org.id),
        plan,
        why,
    })
}

/// The organisation's plan: an admin's choice for it, else its owner's own (`owner`: the
/// owner's row when the caller has read it already).
pub async fn org_plan(
    db: &impl ConnectionTrait,
    plans: &Plans,
    org: &org::Model,
    owner: Option<&user::Model>,
) -> Result<String, DbErr> {
    if let Some(p) = org.plan.as_deref().filter(|p| plans.known(p)) {
        return Ok(p.to_owned());
    }
    let owner = match owner.filter(|u| u.id == org.owner_id) {
        Some(u) => Some(u.clone()),
        None => {
            user::Entity::find_by_id(org.owner_id.clone())
                .one(db)
                .await?
        }
    };
    Ok(match owner {
        Some(owner) => plans.of_user(&owner, Utc::now()).0,
        None => super::FREE.to_owned(),
    })
}

/// How long a standing is trusted when no notice says it changed.
const TTL: Duration = Duration::from_secs(2);
const MAX_ENTRIES: usize = 10_000;

#[derive(Default)]
pub struct Cache {
    entries: Mutex<HashMap<String, (Arc<Standing>, Instant)>>,
    /// One more for every forget: a standing read before a forget is not kept.
    generation: std::sync::atomic::AtomicU64,
}

impl Cache {
    /// The user's standing; alone on `free` when the database cannot say (the smaller
    /// limits are the safe side).
    pub async fn get(
        &self,
        db: &impl ConnectionTrait,
        plans: &Plans,
        user_id: &str,
    ) -> Arc<Standing> {
        if let Ok(entries) = self.entries.lock()
            && let Some((s, at)) = entries.get(user_id)
            && at.elapsed() < TTL
        {
            return s.clone();
        }
        let read_at = self.generation.load(std::sync::atomic::Ordering::SeqCst);
        let s = match resolve(db, plans, user_id).await {
            Ok(s) => Arc::new(s),
            Err(e) => {
                tracing::warn!(error = %e, "reading a user's plan failed; using free");
                return Arc::new(Standing::alone(user_id));
            }
        };
        if let Ok(mut entries) = self.entries.lock()
            && self.generation.load(std::sync::atomic::Ordering::SeqCst) == read_at
        {
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(user_id.to_owned(), (s.clone(), Instant::now()));
        }
        s
    }

    /// Drops every standing.
    pub fn clear(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            self.generation
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            entries.clear();
        }
    }
}
