//! Jobs of the `payments` group: the broker-down fallback ([`fallback`]) and the expiry
//! of unpaid intents ([`expiry`]).

pub mod expiry;
pub mod fallback;
