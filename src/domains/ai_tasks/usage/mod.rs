//! What the providers consumed, and what it cost: every finished step records its usage
//! (tokens in and out, images, media seconds) in `ai_usage`, with the credits its task
//! was charged on the row of its last step; kinds may be priced by the token on top of
//! their flat cost ([`pricing`]); `GET /v1/me/usage` sums a tenant's rows by kind and
//! provider ([`routes`]). What a provider reports it used is read from its output by
//! [`crate::providers::usage`].

pub mod entity;
pub mod pricing;
pub mod record;
pub mod routes;

pub use crate::providers::usage::Usage;
