//! Schema migrations for conveyor, portable to SQLite, MySQL/MariaDB and PostgreSQL.
//! Migrations depend only on sea-orm-migration, never on the application's entities,
//! so history keeps its meaning when entities change.

pub use sea_orm_migration::prelude::*;

mod m20261202_000001_delivery_core;
mod m20261202_000002_users_credits;
mod m20261202_000003_ai_tasks;
mod m20261202_000004_ws_tickets;
mod m20261203_000005_dead_letter_actions;
mod m20261203_000006_flash_sale;
mod m20261203_000007_payments;
mod m20261203_000008_payment_effects;
mod m20261203_000009_material_search;
mod m20261203_000010_message_deaths;
mod m20261203_000011_tenant_limits;
mod m20261203_000012_ledger_without_user_fk;
mod m20261204_000013_ops_alerts;
mod m20261204_000014_queue_settings;
mod m20261204_000015_outbox_pending_partial;
mod m20261204_000016_tasks_active_index;
mod m20261205_000017_payment_intent_indexes;
mod m20261205_000018_canary_pings;
mod m20261206_000019_media;
mod m20261206_000020_task_event_text;
mod m20261206_000021_ai_usage;
mod m20261207_000022_task_waits;
mod m20261208_000023_material_vectors;
mod m20261208_000024_webhooks;
mod m20261208_000025_task_retries;
mod m20261208_000026_dead_letter_business_ids;
mod m20261208_000027_task_metadata;
mod m20261209_000028_plans_orgs;
mod m20261210_000029_trace_context;
mod m20261211_000030_org_invitations;
mod m20261212_000031_hot_task_updates;

pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261202_000001_delivery_core::Migration),
            Box::new(m20261202_000002_users_credits::Migration),
            Box::new(m20261202_000003_ai_tasks::Migration),
            Box::new(m20261202_000004_ws_tickets::Migration),
            Box::new(m20261203_000005_dead_letter_actions::Migration),
            Box::new(m20261203_000006_flash_sale::Migration),
            Box::new(m20261203_000007_payments::Migration),
            Box::new(m20261203_000008_payment_effects::Migration),
            Box::new(m20261203_000009_material_search::Migration),
            Box::new(m20261203_000010_message_deaths::Migration),
            Box::new(m20261203_000011_tenant_limits::Migration),
            Box::new(m20261203_000012_ledger_without_user_fk::Migration),
            Box::new(m20261204_000013_ops_alerts::Migration),
            Box::new(m20261204_000014_queue_settings::Migration),
            Box::new(m20261204_000015_outbox_pending_partial::Migration),
            Box::new(m20261204_000016_tasks_active_index::Migration),
            Box::new(m20261205_000017_payment_intent_indexes::Migration),
            Box::new(m20261205_000018_canary_pings::Migration),
            Box::new(m20261206_000019_media::Migration),
            Box::new(m20261206_000020_task_event_text::Migration),
            Box::new(m20261206_000021_ai_usage::Migration),
            Box::new(m20261207_000022_task_waits::Migration),
            Box::new(m20261208_000023_material_vectors::Migration),
            Box::new(m20261208_000024_webhooks::Migration),
            Box::new(m20261208_000025_task_retries::Migration),
            Box::new(m20261208_000026_dead_letter_business_ids::Migration),
            Box::new(m20261208_000027_task_metadata::Migration),
            Box::new(m20261209_000028_plans_orgs::Migration),
            Box::new(m20261210_000029_trace_context::Migration),
            Box::new(m20261211_000030_org_invitations::Migration),
            Box::new(m20261212_000031_hot_task_updates::Migration),
        ]
    }
}
