//! What the webhooks show on the ops console: endpoints that fail (or were disabled for
//! it), and the deliveries still being attempted, by tenant. And how long the delivery
//! log is kept.

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use sea_orm::sea_query::{Expr, Func};
use sea_orm::{
    ColumnTrait, Condition, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
};
use serde_json::json;

use super::entity::{DeliveryStatus, attempt, delivery, endpoint, event};
use crate::housekeeping::Retention;
use crate::ops::{Panel, PanelView, TableView};

pub const PANELS: &[Panel] = &[Panel {
    source: "webhooks",
    load: load_boxed,
}];

/// Rows per table.
const ROWS: u64 = 20;

fn load_boxed(db: &DatabaseConnection) -> BoxFuture<'_, anyhow::Result<PanelView>> {
    Box::pin(load(db))
}

async fn load(db: &DatabaseConnection) -> anyhow::Result<PanelView> {
    let failing = endpoint::Entity::find()
        .filter(
            Condition::any()
                .add(endpoint::Column::FailingSince.is_not_null())
                .add(endpoint::Column::DisabledReason.is_not_null()),
        )
        .order_by_asc(endpoint::Column::FailingSince)
        .limit(ROWS)
        .all(db)
        .await?;
    let backlog: Vec<(String, i64, Option<DateTime<Utc>>)> = delivery::Entity::find()
        .select_only()
        .column(delivery::Column::UserId)
        .column_as(delivery::Column::Id.count(), "n")
        .column_as(delivery::Column::CreatedAt.min(), "oldest")
        .filter(delivery::Column::Status.eq(DeliveryStatus::Pending))
        .group_by(delivery::Column::UserId)
        .order_by_desc(Func::count(Expr::col(delivery::Column::Id)))
        .limit(ROWS)
        .into_tuple()
        .all(db)
        .await?;
    let stamp = |t: Option<DateTime<Utc>>| {
        t.map_or(json!("—"), |t| {
            json!(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        })
    };
    Ok(PanelView {
        source: "webhooks".into(),
        title: "Webhooks".into(),
        tables: vec![
            TableView {
                title: "Failing endpoints".into(),
                columns: ["tenant", "endpoint", "url", "failing since", "state"]
                    .map(String::from)
                    .to_vec(),
                rows: failing
                    .into_iter()
                    .map(|e| {
                        let state = match (&e.disabled_reason, e.enabled) {
                            (Some(_), false) => "disabled (failing)",
                            (_, false) => "disabled",
                            _ => "failing",
                        };
                        vec![
                            json!(e.user_id),
                            json!(e.id),
                            json!(e.url),
                            stamp(e.failing_since),
                            json!(state),
                        ]
                    })
                    .collect(),
            },
            TableView {
                title: "Deliveries being attempted, by tenant".into(),
                columns: ["tenant", "pending", "oldest"].map(String::from).to_vec(),
                rows: backlog
                    .into_iter()
                    .map(|(user, n, oldest)| vec![json!(user), json!(n), stamp(oldest)])
                    .collect(),
            },
        ],
        oldest_waiting: Default::default(),
        rules: &[],
        conditions: Vec::new(),
    })
}

/// The delivery log is kept 30 days: events, deliveries that ended, their attempts.
pub const RETENTION: &[Retention] = &[Retention {
    table: "webhook deliveries, attempts and events",
    keep: std::time::Duration::from_secs(30 * 24 * 3600),
    trim: trim_boxed,
}];

fn trim_boxed(db: &DatabaseConnection, before: DateTime<Utc>) -> BoxFuture<'_, Result<u64, DbErr>> {
    Box::pin(trim(db, before))
}

/// Deletes ended deliveries made before `before` with their attempts, then the events
/// no delivery names any more. A delivery still being attempted stays (a retry by hand
/// restarts an old one).
async fn trim(db: &DatabaseConnection, before: DateTime<Utc>) -> Result<u64, DbErr> {
    let old: Vec<(String, String)> = delivery::Entity::find()
        .select_only()
        .column(delivery::Column::Id)
        .column(delivery::Column::EventId)
        .filter(delivery::Column::CreatedAt.lt(before))
        .filter(delivery::Column::Status.ne(DeliveryStatus::Pending))
        .limit(5000)
        .into_tuple()
        .all(db)
        .await?;
    if old.is_empty() {
        return Ok(0);
    }
    let ids: Vec<String> = old.iter().map(|(d, _)| d.clone()).collect();
    attempt::Entity::delete_many()
        .filter(attempt::Column::DeliveryId.is_in(ids.clone()))
        .exec(db)
        .await?;
    let gone = delivery::Entity::delete_many()
        .filter(delivery::Column::Id.is_in(ids))
        .exec(db)
        .await?
        .rows_affected;
    let events: Vec<String> = old.into_iter().map(|(_, e)| e).collect();
    let still: Vec<String> = delivery::Entity::find()
        .select_only()
        .column(delivery::Column::EventId)
        .filter(delivery::Column::EventId.is_in(events.clone()))
        .into_tuple()
        .all(db)
        .await?;
    let orphans: Vec<String> = events.into_iter().filter(|e| !still.contains(e)).collect();
    event::Entity::delete_many()
        .filter(event::Column::Id.is_in(orphans))
        .exec(db)
        .await?;
    Ok(gone)
}
