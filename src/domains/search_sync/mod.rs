//! Search sync (issue 15): materials (what AI tasks produce) reach a search index in
//! bulk, fenced by their row version, and their owners search them. Every create, edit
//! and delete of a material writes a `search.sync` message through the outbox in its
//! transaction ([`store`]); the `search` consumer group takes them in batches and writes
//! each batch with one bulk request ([`handler`]), behind a circuit breaker
//! ([`breaker`]) so an outage sends batches to the retry tiers instead of hammering the
//! engine; the backlog waits in the broker and drains in bulk when it returns.
//!
//! Files: [`routes`] (materials and search over HTTP), [`store`] (materials and their
//! sync messages), [`messages`], [`queues`], [`handler`] (the batch consumer),
//! [`backend`] (this process's index and breaker), [`reindex`] (a new index from the
//! database, swapped in atomically), [`settings`] (`[search]`).

pub mod backend;
pub mod breaker;
pub mod entity;
pub mod handler;
pub mod limits;
pub mod messages;
pub mod queues;
pub mod reindex;
pub mod routes;
pub mod settings;
pub mod store;

use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::BoxFuture;

use super::{Domain, Handlers, no_jobs, no_streams};
use crate::api::Core;
use crate::api::health::Probe;
use crate::consumer::Worker;
use crate::platform::Platform;
use backend::Search;

pub const DOMAIN: Domain = Domain {
    name: "search_sync",
    group: "search",
    queues: queues::QUEUES,
    delays: &[],
    handlers,
    jobs: no_jobs,
    routes,
    openapi: <routes::Doc as utoipa::OpenApi>::openapi,
    gauges: &[],
    panels: &[],
    streams: no_streams,
    limits: limits::LIMITS,
    settings: Some(settings::SECTION),
    probes,
};

fn handlers(platform: &Platform) -> BoxFuture<'_, anyhow::Result<Handlers>> {
    async move {
        let search = Search::of(platform).await?;
        let sync = Arc::new(handler::SyncHandler { search });
        Ok(vec![(&queues::SEARCH_SYNC, Worker::Batch(sync))])
    }
    .boxed()
}

fn routes<'a>(
    platform: &'a Platform,
    core: &'a Core,
) -> BoxFuture<'a, anyhow::Result<axum::Router>> {
    async move {
        Ok(routes::routes(routes::Materials {
            core: core.clone(),
            search: Search::of(platform).await?,
        }))
    }
    .boxed()
}

/// The search backend, reported by `/readyz` and `/metrics` but not required: the API
/// takes work while search is away (only searches answer 503 meanwhile).
fn probes(platform: &Platform) -> BoxFuture<'_, anyhow::Result<Vec<Probe>>> {
    async move {
        let search = Search::of(platform).await?;
        Ok(vec![Probe::optional("search", move || {
            let search = search.clone();
            async move { search.index.ping().await.map_err(|e| e.to_string()) }.boxed()
        })])
    }
    .boxed()
}
