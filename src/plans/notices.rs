//! A plan changed somewhere (a membership bought or refunded, an admin's choice, an
//! organisation's plan or members): every API instance drops every standing it cached
//! (a user's change may be an organisation's: its members follow), so the change holds
//! on the next request rather than after a cache's TTL. Plan changes are rare; a cache
//! refilled on the next requests is cheap.

use serde::{Deserialize, Serialize};

use crate::broker::Broker;
use crate::bus::{self, Topic};

/// The notice: nothing more than that a plan changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanChanged {}

pub const PLAN_NOTICES: Topic<PlanChanged> = Topic::new("plans", 256);

/// Tells every instance (this one included); a lost notice is bounded by the standing
/// cache's TTL.
pub async fn announce(broker: &dyn Broker) {
    if let Err(e) = bus::publish(broker, &PLAN_NOTICES, &[PlanChanged {}]).await {
        tracing::warn!(error = %e, "plan change not announced (caches expire on their own)");
    }
}
