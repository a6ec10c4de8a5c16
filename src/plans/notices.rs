//! A plan changed somewhere (a membership bought or refunded, an admin's choice, an
//! organisation's plan or members): every API instance drops the standings it cached,
//! so the change holds on the next request rather than after a cache's TTL.

use serde::{Deserialize, Serialize};

use crate::broker::Broker;
use crate::bus::{self, Topic};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanChanged {
    /// The users whose standing changed; empty: possibly anyone's (an organisation's).
    pub users: Vec<String>,
}

pub const PLAN_NOTICES: Topic<PlanChanged> = Topic::new("plans", 256);

/// Tells every instance (this one included); a lost notice is bounded by the standing
/// cache's TTL.
pub async fn announce(broker: &dyn Broker, users: Vec<String>) {
    if let Err(e) = bus::publish(broker, &PLAN_NOTICES, &[PlanChanged { users }]).await {
        tracing::warn!(error = %e, "plan change not announced (caches expire on their own)");
    }
}
