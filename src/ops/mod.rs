//! The operations console: a board per API instance that samples every queue (depths
//! from the broker; rates, consumers and concurrency from the [reports](reporter) every
//! worker process sends on the control fan-out), the dead letters and the domains'
//! [`Panel`]s; the [alerts](alerts) evaluated on those samples and notified to webhooks;
//! `/ops`, the page, and its admin API ([`routes`]).
//!
//! # Layout
//! - `board.rs`: sampling, the per-queue history
//! - `snapshot.rs`: the [`Snapshot`] the page and the API show
//! - `panel.rs`: what a domain brings to the page
//! - `alerts.rs`: the rules, the leader lease, `ops_alerts` episodes
//! - `notify.rs`: generic, DingTalk and WeCom webhook notices
//! - `reporter.rs`: the worker processes' side
//! - `routes.rs`, `page.html`: the page and `/v1/admin/ops`, `/ops/stream`, `/alerts`

pub mod alerts;
pub mod board;
pub mod entity;
pub mod notify;
pub mod panel;
pub mod reporter;
pub mod routes;
mod rules;
pub mod settings;
pub mod snapshot;

pub use board::Board;
pub use panel::{Panel, PanelView, TableView};
pub use snapshot::Snapshot;
