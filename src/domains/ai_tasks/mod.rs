//! AI generation tasks, end to end.
//!
//! `POST /v1/tasks` reserves the kind's credits, inserts the task (PENDING) and writes
//! its run message to the outbox in one transaction, and answers 202. A consumer claims
//! the task's lease (PROCESSING, attempt + 1), runs the step at the provider its kind
//! (or step) names ([`router`], over [`crate::providers`]) with a heartbeat and progress
//! events, and commits the result (SUCCESS, the reservation consumed, its events: the
//! final state and the output, of which search sync makes a material, see [`events`])
//! only while it still holds the lease.
//! Failures go RETRYING (retry tier) or FAILED (dead letter) with a refund; cancel goes
//! CANCELED with a refund; the [`reaper`] re-drives tasks whose consumer died.
//! `video_analysis` runs its steps as separate messages, each published only after
//! the previous step committed. Every step's provider usage is recorded, and kinds can
//! be priced by the token ([`usage`]).
//!
//! Tenants share a lane (the queue a task waits in) by plan at claim time, a waiting
//! task tells its place in line, and some kinds give way under a heavy backlog
//! ([`scheduling`]); a plan may leave kinds out ([`entitled`]). A step may wait without
//! a worker, for its provider's job or a person's approval ([`parked`]).
//!
//! The task's lifecycle is this folder's own files: its words ([`kinds`], [`entity`],
//! [`messages`], [`events`]), its queries ([`store`]), the consumer side ([`handler`]),
//! the submission path ([`submitter`]), the HTTP routes ([`routes`] and the files they
//! name) and its views. The rooms beside it: [`scheduling`], [`parked`] and [`usage`].

pub mod admin;
pub mod answers;
pub mod cli;
pub mod entitled;
pub mod entity;
pub mod events;
pub mod find;
pub mod gauges;
pub mod handler;
pub mod inputs;
pub mod kinds;
pub mod limits;
pub mod messages;
pub mod metadata;
pub mod metrics;
pub mod notify;
pub mod ops;
pub mod parked;
pub mod queues;
pub mod reaper;
pub mod retry;
pub mod router;
pub mod routes;
pub mod scheduling;
pub mod settings;
pub mod state;
pub mod store;
pub mod stream;
pub mod submitter;
pub mod usage;
pub mod view;

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::BoxFuture;

pub use handler::AiTaskHandler;
pub use kinds::{Status, TaskKind};

use super::{Domain, Installed};
use crate::consumer::Worker;
use crate::platform::Platform;
use settings::AiSettings;

/// The AI-task flow in the domain registry.
pub const DOMAIN: Domain = Domain::new("ai_tasks", "ai", queues::QUEUES, install)
    .delays(queues::CHECK_DELAYS)
    .settings(settings::SECTION)
    .limits(limits::LIMITS)
    .events(events::EVENTS)
    .gauges(gauges::GAUGES)
    .panels(ops::PANELS)
    .retention(RETENTION)
    .openapi(<routes::Doc as utoipa::OpenApi>::openapi)
    .cli(cli::CLI);

/// Streamed text events are trimmed after a week: a client resumes within minutes, and
/// the task's result keeps the whole text.
/// Usage rows stay 400 days: a year of invoices can be checked against them.
const RETENTION: &[crate::housekeeping::Retention] = &[
    crate::housekeeping::Retention {
        table: "task_events (streamed text)",
        keep: std::time::Duration::from_secs(7 * 24 * 3600),
        trim: store::trim::text_events,
    },
    crate::housekeeping::Retention {
        table: "ai_usage",
        keep: std::time::Duration::from_secs(400 * 24 * 3600),
        trim: usage::record::trim,
    },
];

fn install(platform: &Platform) -> BoxFuture<'_, anyhow::Result<Installed>> {
    async move {
        let s = &platform.settings;
        let ai = Arc::new(AiSettings::from_settings(s)?);
        let executor = Arc::new(router::Router::new(&ai, platform.providers.clone())?);
        let tasks = Arc::new(AiTaskHandler {
            executor,
            ai: ai.clone(),
            relay: platform.relay.clone(),
            max_payload: s.broker.max_payload_bytes,
            share: scheduling::share::FairShare::new(
                platform.limits.clone(),
                platform.tally.clone(),
            ),
            reports: handler::report_writer::start(
                platform.db.clone(),
                platform.broker.clone(),
                s.database.group_commit_writers,
            ),
            beats: handler::beats::start(platform.db.clone(), 1),
            events: platform.events.clone(),
        });
        let mut installed = Installed::default();
        for queue in queues::QUEUES {
            installed = installed.handler(queue, Worker::Batch(tasks.clone()));
        }
        let reaper = reaper::Reaper {
            db: platform.db.clone(),
            broker: platform.broker.clone(),
            relay: platform.relay.clone(),
            max_payload: s.broker.max_payload_bytes,
            ai: ai.clone(),
            events: platform.events.clone(),
        };
        // The submission writers get a pool of their own, so each keeps to one server
        // connection: every batch size is its own prepared statement, and on the shared
        // pool (which hands out idle connections in turn) every connection prepared every
        // size. Made only by a process that serves HTTP.
        let writers = platform.own_pool_later(s.database.group_commit_writers);
        let (broker, relay) = (platform.broker.clone(), platform.relay.clone());
        let (max_payload, db) = (s.broker.max_payload_bytes, s.database.clone());
        let events = platform.events.clone();
        Ok(installed
            .job(move |token| reaper.run(token).boxed())
            .stream(Arc::new(stream::TaskStream))
            .routes(move |core| {
                async move {
                    let submitter = submitter::Submitter::start(
                        writers.await?,
                        broker,
                        relay,
                        max_payload,
                        db.group_commit_writers,
                        Duration::from_millis(db.group_commit_linger_ms),
                    );
                    let shedding = scheduling::shedding::Shedding::start(
                        &ai.shedding,
                        core.broker.clone(),
                        core.shutdown.clone(),
                    );
                    Ok(routes::routes(routes::Tasks {
                        core,
                        ai,
                        submitter,
                        shedding,
                        events,
                    }))
                }
                .boxed()
            }))
    }
    .boxed()
}
