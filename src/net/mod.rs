//! Outgoing HTTP to addresses someone else names: a tenant's webhook endpoint, a
//! provider's output URL. [`guard`] keeps such requests off loopback, private and
//! link-local addresses (SSRF), for every module that makes them.

pub mod guard;
