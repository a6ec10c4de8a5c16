//! Search sync (issue 15): materials (what AI tasks produce) reach a search index in
//! bulk, fenced by their row version, and their owners search them. Every create, edit
//! and delete of a material writes a `search.sync` message through the outbox in its
//! transaction ([`store`]); the `search` consumer group takes them in batches and writes
//! each batch with one bulk request ([`handler`]), behind a circuit breaker
//! ([`breaker`]) so an outage sends batches to the retry tiers instead of hammering the
//! engine; the backlog waits in the broker and drains in bulk when it returns.
//!
//! Files: [`routes`] (materials and search over HTTP), [`store`] (materials and their
//! sync messages), [`events`] (a material of each task output heard on the event seam,
//! `material.created`), [`messages`], [`queues`], [`handler`] (the batch consumer),
//! [`vectors`] (what a material is found by in a search by meaning), [`backend`]
//! (this process's index and breaker), [`reindex`] (a new index from the
//! database, swapped in atomically), [`settings`] (`[search]`).

pub mod backend;
pub mod breaker;
pub mod cli;
pub mod entity;
pub mod events;
pub mod handler;
pub mod limits;
pub mod messages;
pub mod queues;
pub mod reindex;
pub mod routes;
pub mod settings;
pub mod store;
pub mod vectors;
pub mod view;

use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::BoxFuture;

use super::{Domain, Installed};
use crate::api::health::Probe;
use crate::consumer::Worker;
use crate::platform::Platform;
use backend::LazySearch;
use settings::SearchSettings;

pub const DOMAIN: Domain = Domain::new("search_sync", "search", queues::QUEUES, install)
    .settings(settings::SECTION)
    .limits(limits::LIMITS)
    .openapi(<routes::Doc as utoipa::OpenApi>::openapi)
    .events(events::EVENTS)
    .cli(cli::CLI);

/// The backend is opened by the first part that uses it (see [`backend`]).
fn install(platform: &Platform) -> BoxFuture<'_, anyhow::Result<Installed>> {
    async move {
        let settings = SearchSettings::from_settings(&platform.settings)?;
        // A search by meaning embeds its query with the provider that embedded the
        // materials.
        let embeddings = platform
            .providers
            .embeddings(&settings.query_provider(&platform.settings));
        let search = Arc::new(LazySearch::new(settings));
        let sync = Arc::new(handler::SyncHandler {
            search: search.clone(),
        });
        let (for_routes, for_probe) = (search.clone(), search);
        // Reported by `/readyz` and `/metrics` but not required: the API takes work while
        // search is away (only searches answer 503 meanwhile).
        let probe = Probe::optional("search", move || {
            let search = for_probe.clone();
            async move {
                let search = search.get().map_err(|e| format!("{e:#}"))?;
                search.index.ping().await.map_err(|e| e.to_string())
            }
            .boxed()
        });
        Ok(Installed::default()
            .listener(events::Materials)
            .handler(&queues::SEARCH_SYNC, Worker::Batch(sync))
            .probe(probe)
            .routes(move |core| {
                async move {
                    Ok(routes::routes(routes::Materials {
                        core,
                        search: for_routes.get()?,
                        embeddings,
                    }))
                }
                .boxed()
            }))
    }
    .boxed()
}
