//! Where a tenant's webhook may go (SSRF safety): the platform's guard
//! ([`crate::net::guard`]), shared with every fetch of a URL someone else names. `https`
//! only (unless `allow_http`), no credentials in the URL, and no address that is not
//! public unless `allow_private_targets`. The address is checked when the endpoint is
//! saved ([`check`]) and again by the resolver the delivery client connects through
//! ([`GuardedResolver`]), so a name that resolves somewhere else later (DNS rebinding) is
//! refused at the moment it matters. Deliveries follow no redirect and use no proxy.

pub use crate::net::guard::{GuardedResolver, Policy, check, literal_forbidden};
