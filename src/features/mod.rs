//! The platform's own features as entries of the same contract as the domains
//! ([`crate::contract::Feature`]): each file wires one platform module (its routes, its
//! OpenAPI entries, its limits, gauges, tables and bus listeners) the way a domain's
//! `mod.rs` wires its folder, so the composition root composes them and the domains in
//! one loop and names neither. `app::FEATURES` lists them; a new one is a file here and
//! one line there.
//!
//! They live above the modules they wire: a platform module cannot name the contract
//! (the contract names the platform, whose settings name those modules).

mod account;
mod dead_letters;
mod health;
mod live;
mod notices;
mod ops;
mod tables;

pub use account::ACCOUNT;
pub use dead_letters::DEAD_LETTERS;
pub use health::{ASSETS, HEALTH};
pub use live::LIVE;
pub use notices::NOTICES;
pub use ops::OPS;
pub use tables::{DELIVERY, IDEMPOTENCY};
