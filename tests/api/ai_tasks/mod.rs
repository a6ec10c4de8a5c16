//! AI generation tasks end to end, through the HTTP API and the consumers: submitting
//! ([`submit`]), running ([`run`]), failing and canceling ([`failures`]). The helpers
//! here are shared by all of them.

use std::time::Duration;

use conveyor::domains::ai_tasks::Status;
use conveyor::domains::ai_tasks::entity::{event, task};
use conveyor::domains::ai_tasks::store::{self, Change, Guard};
use conveyor::domains::search_sync::entity::material;
use conveyor::domains::search_sync::store::material_of;
use conveyor::users::entity::ledger;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};

use crate::helpers::tasks;
use crate::helpers::{Backend, TestApp, TestEnv, done, spawn_app};

mod approval;
mod failures;
mod find;
mod run;
mod shedding;
mod submit;

async fn app(backend: Backend, test: &str) -> Option<(TestEnv, TestApp)> {
    let env = TestEnv::new(backend, test)
        .await?
        .with_max_attempts("ai.short", 3);
    let app = spawn_app(&env).await;
    app.start_consumers();
    Some((env, app))
}

async fn ledger_of(app: &TestApp, user_id: &str) -> Vec<ledger::Model> {
    ledger::Entity::find()
        .filter(ledger::Column::UserId.eq(user_id))
        .order_by_asc(ledger::Column::Id)
        .all(&app.platform.db)
        .await
        .unwrap()
}

/// The `ai.short` dead letters, once there is one: a task turns FAILED (with its
/// refund) just before its dead letter is recorded.
async fn dead_letters_of(app: &TestApp) -> Vec<conveyor::dead_letters::DeadLetter> {
    let list = || conveyor::dead_letters::list(&app.platform.db, Some("ai.short"), 10);
    crate::helpers::wait_until(Duration::from_secs(10), "the dead letter", || async {
        !list().await.unwrap().is_empty()
    })
    .await;
    list().await.unwrap()
}

async fn events(app: &TestApp, task_id: &str) -> Vec<event::Model> {
    store::events_after(&app.platform.db, task_id, 0)
        .await
        .unwrap()
}
