//! conveyor: an async task platform for AI SaaS products, built on RabbitMQ.
//!
//! The API validates, records and enqueues in milliseconds; consumers do the slow work
//! through durable queues with manual acks, retry delay tiers and dead-letter queues;
//! every effect happens once. Each backend has a production implementation (RabbitMQ,
//! Redis, MySQL/PostgreSQL) and an embedded one (in-process broker persisted in SQLite,
//! in-process dedupe, SQLite) behind the same small trait, tested by the same suite.
//!
//! # Layout
//!
//! - [`config`]: loading, layering (built-in `config/base.toml`, overlay, `CONVEYOR__*`
//!   env) and masking; the section types live with the modules that read them.
//! - [`settings`]: [`settings::Settings`], the platform's sections and the domains'
//!   checked together at start-up.
//! - [`telemetry`]: logging, the Prometheus recorder, gauges sampled at each scrape, the
//!   report each process sends the ops board.
//! - [`traces`]: distributed traces (OpenTelemetry over OTLP/HTTP when configured) and
//!   the W3C `traceparent` that carries one across processes in envelopes and headers.
//! - [`tally`]: per-queue totals (processed, dead-lettered, published) and consumers of
//!   one platform, counted by the consumer runtime and the relay.
//! - [`shutdown`]: SIGTERM/Ctrl-C → one cancellation token.
//! - [`db`]: database connection (SQLite, MySQL/MariaDB, PostgreSQL), migrations, and
//!   [`db::group_commit`] (concurrent small writes committed as one transaction).
//! - [`broker`]: the broker trait, the message [`broker::Envelope`], the topology table
//!   (the only place queue names live) and the RabbitMQ and embedded implementations.
//! - [`redis_conn`]: a Redis connection for a URL from the settings, the one way every
//!   Redis user connects (dedupe, rates, the providers' fleet limits, the stock).
//! - [`dedupe`]: the claim/complete/release store (Redis or in-process).
//! - [`outbox`]: writes messages inside the caller's transaction; the relay publishes them.
//! - [`events`]: the event seam between domains: a domain records its events in its own
//!   transaction; the listeners other domains register (webhooks, search sync) hear them
//!   in that transaction.
//! - [`bus`]: the typed cluster bus over the broker's fan-out ([`bus::Topic`]: live
//!   events, key notices, process reports, each on a topic of its own).
//! - [`consumer`]: the consume loop, `process_one` and `process_batch` (single-message and
//!   batch handlers: admission, handler, settlement), the processed-message fence.
//! - [`dead_letters`]: dead letters recorded for operators; replay and discard (audited, paced), admin API.
//! - [`users`]: users, roles and the visibility rule, hashed API keys, the credit ledger,
//!   memberships, organisations (team accounts) and the invitations that join them.
//! - [`whole`]: whole numbers in JSON as JSON Schema counts them (`5.0` is 5), for the
//!   fields that take counts.
//! - [`plans`]: what each plan gives (limits, kinds, weight, storage) and a user's
//!   standing (their tenant and plan), cached and cleared by notices.
//! - [`limits`]: what one tenant may take: limits declared as data by the modules that
//!   enforce them, rates (GCRA in Redis or in-process), caps on what is held open,
//!   layered configured → plan → per-tenant overrides by admins; failed authentication
//!   is bounded in [`api`].
//! - [`search`]: the search backend seam (versioned bulk writes, owner-filtered search)
//!   with its embedded index (tantivy, with a CJK bigram tokenizer) and Elasticsearch
//!   adapter; search by meaning (`search::semantic`: vectors, exact cosine, the query
//!   embedder's seam).
//! - [`instance`]: this process run's name (`host:pid:run`), in reports and failure
//!   histories.
//! - [`standard_webhooks`]: Standard Webhooks signatures (provider callbacks in, the
//!   tenants' webhooks out).
//! - [`net`]: outgoing requests to URLs someone else names (webhook endpoints, providers'
//!   outputs): the SSRF guard (public addresses only, checked on every hop).
//! - [`storage`]: media files in an object store (a local directory or S3-compatible):
//!   checked keys, sniffed kinds, streamed writes, ranged reads, signed URLs.
//! - [`providers`]: the AI providers below the domains: the executor seam, the
//!   OpenAI-compatible, Dify, prediction (Replicate), FFmpeg and simulated adapters,
//!   HTTP and SSE reading, the fleet's rate limits and slots, `[ai.providers.*]` and the
//!   usage they report; [`providers::Providers`] holds them by name, one per process.
//!   Providers know no domain: a step names its provider.
//! - [`platform`]: [`platform::Platform`], the connected backends of one process (no domain).
//! - [`housekeeping`]: hourly trimming of the tables whose owners declare a
//!   [`housekeeping::Retention`] (idempotency keys, published outbox rows, fences, the
//!   domains' own).
//! - [`idempotency`]: idempotent POSTs: the `Idempotency-Key` header, the answer stored
//!   with the effect in one transaction, replayed (or 422) on a repeat.
//! - [`api`]: the HTTP kit: core state, layers, extractors, pagination, health
//!   endpoints, the base of the OpenAPI document, the TypeScript client's bundle the
//!   pages load (`/assets/conveyor-client.js`). Knows no route module above it.
//! - [`account`]: the caller's own account (`GET /v1/me`, `GET /v1/me/ledger`).
//! - [`live`]: live streams of any kind (a domain's [`live::Source`]) fanned out to
//!   WebSocket and SSE subscribers, WebSocket tickets.
//! - [`ops`]: the operations console: a board per API instance (queues, rates from every
//!   process's report, the domains' panels, dead letters), alerts notified to webhooks,
//!   `/ops` and its admin API.
//! - [`contract`]: how a feature plugs in ([`contract::Feature`]: routes, OpenAPI
//!   entries, limits, gauges, panels, tables), one contract for the platform's own
//!   features and the domains (a domain is a feature with queues, settings, a command).
//! - [`features`]: the platform's own features as entries of that contract (health,
//!   assets, account, live, dead letters, ops, idempotency keys, the delivery tables, the
//!   caches' notices).
//! - [`domains`]: business flows, each a folder with its queues, messages, routes,
//!   handlers, jobs, store and streams, and the registry [`domains::ALL`]: AI tasks,
//!   flash-sale orders, payments, search sync (materials and their index), the canary
//!   (a synthetic round trip).
//! - [`error`]: `ApiError`, the JSON error answer of every route.
//! - [`app`]: the composition root, the only module that reads the registry: what it
//!   declares ([`app::topology`], sections, limits, retention), the workers a process
//!   runs, the router and the OpenAPI document, the `Application` (the server).
//! - [`cli`]: the `conveyor` command line.
//! - [`client`]: the CLI's API client (submit, watch with a progress bar).

pub mod account;
pub mod api;
pub mod app;
pub mod broker;
pub mod bus;
pub mod cli;
pub mod client;
pub mod config;
pub mod consumer;
pub mod contract;
pub mod db;
pub mod dead_letters;
pub mod dedupe;
pub mod domains;
pub mod error;
pub mod events;
pub mod features;
pub mod housekeeping;
pub mod idempotency;
pub mod instance;
pub mod limits;
pub mod live;
pub mod net;
pub mod ops;
pub mod outbox;
pub mod plans;
pub mod platform;
pub mod providers;
pub mod redis_conn;
pub mod search;
pub mod settings;
pub mod standard_webhooks;

/// A fail point (`--features failpoints` only): with `FAILPOINTS=<name>=1%return` the
/// process aborts there one time in a hundred, as a crash at that spot would. Compiled to
/// nothing otherwise.
#[macro_export]
macro_rules! crash_point {
    ($name:literal) => {
        #[cfg(feature = "failpoints")]
        if fail::eval($name, |_| ()).is_some() {
            std::process::abort();
        }
    };
}
pub mod shutdown;
pub mod storage;
pub mod tally;
pub mod telemetry;
pub mod traces;
pub mod users;
pub mod whole;
