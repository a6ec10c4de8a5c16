//! The AI tasks' panel on the ops console: active tasks by kind and status, the tenants
//! with the most work waiting (by lane and plan), the oldest active ones, the latest
//! failures, the parked jobs and approvals waiting (and the
//! `parked_overdue` alert per provider), and per queue when its oldest waiting task was
//! submitted (the queue row's "oldest" and the `oldest_message` alert).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::json;

use super::entity::task;
use super::entity::wait::PROVIDER;
use super::kinds::{Status, TaskKind};
use super::parked::census::PARKED_OVERDUE;
use crate::ops::panel::Condition;
use crate::ops::{Panel, PanelView, TableView};
use crate::telemetry::gauges::age_secs;

pub const PANELS: &[Panel] = &[Panel {
    source: "ai_tasks",
    load: load_boxed,
}];

/// Rows in the oldest and failures tables.
const ROWS: u64 = 10;

/// Tasks waiting in a queue for a worker (a WAITING task waits at its provider instead).
const QUEUED: [Status; 2] = [Status::Pending, Status::Retrying];

fn load_boxed(db: &DatabaseConnection) -> BoxFuture<'_, anyhow::Result<PanelView>> {
    Box::pin(load(db))
}

async fn load(db: &DatabaseConnection) -> anyhow::Result<PanelView> {
    let by_kind: Vec<(TaskKind, Status, i64)> = task::Entity::find()
        .select_only()
        .column(task::Column::Kind)
        .column(task::Column::Status)
        .column_as(task::Column::Id.count(), "n")
        .filter(task::Column::Status.is_in(Status::ACTIVE))
        .group_by(task::Column::Kind)
        .group_by(task::Column::Status)
        .into_tuple()
        .all(db)
        .await?;
    let waiting_since: Vec<(TaskKind, i32, DateTime<Utc>)> = task::Entity::find()
        .select_only()
        .column(task::Column::Kind)
        .column(task::Column::StepIndex)
        .column_as(task::Column::CreatedAt.min(), "since")
        .filter(task::Column::Status.is_in(QUEUED))
        .group_by(task::Column::Kind)
        .group_by(task::Column::StepIndex)
        .into_tuple()
        .all(db)
        .await?;
    let oldest = task::Entity::find()
        .filter(task::Column::Status.is_in(Status::ACTIVE))
        .order_by_asc(task::Column::CreatedAt)
        .limit(ROWS)
        .all(db)
        .await?;
    let failures = task::Entity::find()
        .filter(task::Column::Status.eq(Status::Failed))
        // When it failed (set once; `idx_tasks_failed` orders by it).
        .order_by_desc(task::Column::FinishedAt)
        .limit(ROWS)
        .all(db)
        .await?;
    let parked = super::parked::census::census(db).await?;
    let most_waiting = super::store::most_waiting(db, ROWS).await?;
    let mut oldest_waiting: BTreeMap<String, DateTime<Utc>> = BTreeMap::new();
    for (kind, step, since) in waiting_since {
        let at = oldest_waiting
            .entry(kind.queue_of(step).key.to_owned())
            .or_insert(since);
        *at = (*at).min(since);
    }
    Ok(PanelView {
        source: "ai_tasks".into(),
        title: "AI tasks".into(),
        tables: vec![
            TableView {
                title: "Active tasks by kind and status".into(),
                columns: vec!["kind".into(), "status".into(), "count".into()],
                rows: by_kind
                    .into_iter()
                    .map(|(k, s, n)| vec![json!(k.as_str()), json!(s.as_str()), json!(n)])
                    .collect(),
            },
            TableView {
                title: "Most work waiting: tenants by lane".into(),
                columns: vec![
                    "tenant".into(),
                    "plan".into(),
                    "lane".into(),
                    "waiting".into(),
                    "oldest s".into(),
                ],
                rows: most_waiting
                    .into_iter()
                    .map(|w| {
                        vec![
                            json!(w.tenant_id),
                            json!(w.plan),
                            json!(w.lane),
                            json!(w.count),
                            json!((age_secs(w.oldest) * 10.0).round() / 10.0),
                        ]
                    })
                    .collect(),
            },
            TableView {
                title: "Oldest active tasks".into(),
                columns: vec![
                    "task".into(),
                    "kind".into(),
                    "status".into(),
                    "age s".into(),
                ],
                rows: oldest
                    .into_iter()
                    .map(|t| {
                        vec![
                            json!(t.id),
                            json!(t.kind.as_str()),
                            json!(t.status.as_str()),
                            json!((age_secs(t.created_at) * 10.0).round() / 10.0),
                        ]
                    })
                    .collect(),
            },
            TableView {
                title: "Recent failures".into(),
                columns: vec![
                    "task".into(),
                    "kind".into(),
                    "failed at".into(),
                    "error".into(),
                ],
                rows: failures
                    .into_iter()
                    .map(|t| {
                        vec![
                            json!(t.id),
                            json!(t.kind.as_str()),
                            json!(t.finished_at.unwrap_or(t.updated_at)),
                            json!(t.error.unwrap_or_default()),
                        ]
                    })
                    .collect(),
            },
            TableView {
                title: "Waiting: parked jobs by provider, and approvals".into(),
                columns: vec![
                    "waiting for".into(),
                    "provider".into(),
                    "count".into(),
                    "oldest s".into(),
                    "past expected".into(),
                ],
                rows: parked
                    .iter()
                    .map(|c| {
                        vec![
                            json!(c.waiting_for),
                            json!(c.provider),
                            json!(c.count),
                            json!((age_secs(c.oldest) * 10.0).round() / 10.0),
                            json!(c.overdue),
                        ]
                    })
                    .collect(),
            },
        ],
        oldest_waiting,
        rules: &[PARKED_OVERDUE],
        conditions: parked
            .iter()
            .filter(|c| c.waiting_for == PROVIDER && c.overdue > 0)
            .map(|c| Condition {
                rule: PARKED_OVERDUE,
                subject: c.provider.clone(),
                value: c.overdue as f64,
                threshold: 0.0,
                for_secs: 0,
                summary: format!(
                    "{}: {} jobs parked past their expected time (oldest parked {:.0} s ago)",
                    c.provider,
                    c.overdue,
                    age_secs(c.oldest)
                ),
            })
            .collect(),
    })
}
