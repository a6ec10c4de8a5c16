//! The canary's event: `canary.ping`, recorded when a ping is sent on a tenant's behalf
//! ([`store::send_for`](super::store::send_for)). It exists to prove the event seam
//! (`crate::events`): a new event type edits only its owner. Declared here and in
//! [`DOMAIN`](super::DOMAIN), recorded by the store, and webhook endpoints may
//! subscribe to it with no edit anywhere else. The canary's own pings (its job's) have
//! no tenant and record none.

use crate::events::EventType;

pub const PING: EventType = EventType::new(
    "canary.ping",
    "a canary ping was sent on the tenant's behalf (a check of the delivery path)",
);

/// The event types the canary records.
pub const EVENTS: &[&EventType] = &[&PING];
