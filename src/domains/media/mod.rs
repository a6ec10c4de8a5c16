//! Media: what users upload and what the platform serves of stored files. The storage
//! itself (keys, sniffing, streamed writes, signed URLs, rows, usage, the collector) is
//! the platform's ([`crate::storage`]); this domain is its HTTP face and schedule:
//! [`routes`] (uploads streamed or presigned, their status and deletion, signed
//! downloads), [`view`], [`job`] (the collector every `storage.sweep_secs`),
//! [`metrics`] (bytes held), [`limits`] (uploads at once per tenant).

pub mod job;
pub mod limits;
pub mod metrics;
pub mod routes;
pub mod view;

use futures::FutureExt as _;
use futures::future::BoxFuture;

use super::{Domain, Installed};
use crate::platform::Platform;

pub const DOMAIN: Domain = Domain::new("media", "media", &[], install)
    .gauges(metrics::GAUGES)
    .limits(limits::LIMITS)
    .streaming(&["/v1/uploads", "/v1/files/"])
    .openapi(<routes::Doc as utoipa::OpenApi>::openapi);

fn install(platform: &Platform) -> BoxFuture<'_, anyhow::Result<Installed>> {
    async move {
        let (db, storage) = (platform.db.clone(), platform.storage.clone());
        Ok(Installed::default()
            .job(move |token| job::run(db, storage, token).boxed())
            .routes(move |core| async move { Ok(routes::routes(routes::Media { core })) }.boxed()))
    }
    .boxed()
}
