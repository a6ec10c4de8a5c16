//! conveyor's integration tests: one binary, run against the embedded backends and,
//! when the services answer (always in CI), RabbitMQ + Redis + MariaDB/PostgreSQL.

// Test and bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

mod ai_tasks;
mod alert_rules;
mod architecture;
mod batches;
mod browser;
mod canary;
mod cli;
mod compensation;
mod concurrency;
mod dead_letters;
mod delivery;
mod docs;
mod domain;
mod flash_sale;
mod flash_sale_writer;
mod health;
mod helpers;
mod limits;
mod live;
mod media;
mod openapi;
mod ops;
mod outbox;
mod payments;
mod plans;
mod providers;
mod rabbitmq;
mod search;
mod search_sync;
mod search_sync_batches;
mod server;
mod traces;
mod typescript_client;
mod webhooks;
