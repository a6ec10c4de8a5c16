//! Endpoints (a tenant's own: every read and write is scoped to the owner) and the
//! delivery log.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait as _,
    QueryFilter, QueryOrder, QuerySelect, TransactionTrait,
};

use super::entity::{DeliveryStatus, attempt, delivery, endpoint};
use super::listener::{self, TEST_EVENT};
use super::messages::Deliver;
use super::queues::WEBHOOKS_DELIVER;
use super::secrets;
use crate::broker::Target;
use crate::events::Event;
use crate::outbox;

pub type Endpoint = endpoint::Model;
pub type Delivery = delivery::Model;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Db(#[from] DbErr),
    #[error("at most {0} endpoints per account")]
    TooMany(u32),
    #[error("the delivery is still being attempted")]
    StillPending,
}

/// A new endpoint, checked by the route.
pub struct NewEndpoint {
    pub url: String,
    pub description: String,
    /// Empty: every event type.
    pub event_types: Vec<String>,
}

/// What an owner may change.
#[derive(Debug, Default)]
pub struct Patch {
    pub url: Option<String>,
    pub description: Option<String>,
    pub event_types: Option<Vec<String>>,
    pub enabled: Option<bool>,
}

fn types_json(types: &[String]) -> String {
    serde_json::to_string(types).unwrap_or_else(|_| "[]".into())
}

/// Creates an endpoint with a new secret, unless the owner has `max` already.
pub async fn create(
    db: &DatabaseConnection,
    user: &str,
    new: NewEndpoint,
    max: u32,
) -> Result<Endpoint, StoreError> {
    let txn = db.begin().await?;
    // Counted under the owner's rows' lock where the engine has one; a race of two
    // creates past the limit costs one endpoint more, never a lost one.
    let count = endpoint::Entity::find()
        .filter(endpoint::Column::UserId.eq(user))
        .count(&txn)
        .await?;
    if count >= u64::from(max) {
        return Err(StoreError::TooMany(max));
    }
    let now = Utc::now();
    let row = endpoint::Model {
        id: uuid::Uuid::now_v7().to_string(),
        user_id: user.to_owned(),
        url: new.url,
        description: new.description,
        event_types: types_json(&new.event_types),
        enabled: true,
        secret: secrets::generate(),
        previous_secret: None,
        previous_until: None,
        disabled_reason: None,
        failing_since: None,
        created_at: now,
        updated_at: now,
    };
    endpoint::Entity::insert(endpoint::ActiveModel::from(row.clone()))
        .exec_without_returning(&txn)
        .await?;
    txn.commit().await?;
    Ok(row)
}

pub async fn list(db: &impl ConnectionTrait, user: &str) -> Result<Vec<Endpoint>, DbErr> {
    endpoint::Entity::find()
        .filter(endpoint::Column::UserId.eq(user))
        .order_by_asc(endpoint::Column::Id)
        .all(db)
        .await
}

pub async fn get_owned(
    db: &impl ConnectionTrait,
    user: &str,
    id: &str,
) -> Result<Option<Endpoint>, DbErr> {
    endpoint::Entity::find_by_id(id.to_owned())
        .filter(endpoint::Column::UserId.eq(user))
        .one(db)
        .await
}

/// Applies `patch`; enabling an endpoint clears why it was disabled and its failing
/// streak. The endpoint after the change; `None` if the owner has no such endpoint.
pub async fn update(
    db: &impl ConnectionTrait,
    user: &str,
    id: &str,
    patch: Patch,
) -> Result<Option<Endpoint>, DbErr> {
    let mut q = endpoint::Entity::update_many()
        .col_expr(endpoint::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(endpoint::Column::Id.eq(id))
        .filter(endpoint::Column::UserId.eq(user));
    if let Some(url) = patch.url {
        q = q.col_expr(endpoint::Column::Url, Expr::value(url));
    }
    if let Some(d) = patch.description {
        q = q.col_expr(endpoint::Column::Description, Expr::value(d));
    }
    if let Some(t) = patch.event_types {
        q = q.col_expr(endpoint::Column::EventTypes, Expr::value(types_json(&t)));
    }
    if let Some(enabled) = patch.enabled {
        q = q.col_expr(endpoint::Column::Enabled, Expr::value(enabled));
        if enabled {
            let none: Option<String> = None;
            q = q
                .col_expr(endpoint::Column::DisabledReason, Expr::value(none))
                .col_expr(
                    endpoint::Column::FailingSince,
                    Expr::value(Option::<DateTime<Utc>>::None),
                );
        }
    }
    if q.exec(db).await?.rows_affected == 0 {
        return Ok(None);
    }
    get_owned(db, user, id).await
}

/// Deletes the endpoint; its deliveries still pending end as FAILED when their turn
/// comes. Whether it existed.
pub async fn delete(db: &impl ConnectionTrait, user: &str, id: &str) -> Result<bool, DbErr> {
    Ok(endpoint::Entity::delete_many()
        .filter(endpoint::Column::Id.eq(id))
        .filter(endpoint::Column::UserId.eq(user))
        .exec(db)
        .await?
        .rows_affected
        > 0)
}

/// A new secret; the one it replaces signs beside it for `overlap`. The endpoint after.
pub async fn rotate(
    db: &impl ConnectionTrait,
    user: &str,
    id: &str,
    overlap: chrono::Duration,
) -> Result<Option<Endpoint>, DbErr> {
    let Some(e) = get_owned(db, user, id).await? else {
        return Ok(None);
    };
    let now = Utc::now();
    let updated = endpoint::Entity::update_many()
        .col_expr(endpoint::Column::Secret, Expr::value(secrets::generate()))
        .col_expr(
            endpoint::Column::PreviousSecret,
            Expr::value(Some(e.secret.clone())),
        )
        .col_expr(
            endpoint::Column::PreviousUntil,
            Expr::value(Some(now + overlap)),
        )
        .col_expr(endpoint::Column::UpdatedAt, Expr::value(now))
        .filter(endpoint::Column::Id.eq(id))
        // The secret read above, so two rotations at once keep a consistent pair.
        .filter(endpoint::Column::Secret.eq(e.secret))
        .exec(db)
        .await?;
    if updated.rows_affected == 0 {
        return Ok(None);
    }
    get_owned(db, user, id).await
}

/// Sends a `webhook.test` event to this endpoint alone (whatever it subscribed to); the
/// event's and the delivery's ids.
pub async fn send_test(
    db: &DatabaseConnection,
    e: &Endpoint,
    give_up: chrono::Duration,
) -> Result<(String, String), DbErr> {
    let txn = db.begin().await?;
    let test = Event::new(
        e.user_id.clone(),
        &TEST_EVENT,
        serde_json::json!({
            "endpoint_id": e.id,
            "message": "a test event from conveyor: this endpoint receives and verifies its webhooks",
        }),
    );
    let written = listener::insert(&txn, give_up, &[(&test, vec![e.id.as_str()])]).await?;
    let ids = written
        .into_iter()
        .next()
        .ok_or_else(|| DbErr::Custom("the test delivery was not written".into()))?;
    txn.commit().await?;
    Ok(ids)
}

/// The endpoint's deliveries, newest first, after `cursor` (a delivery id), optionally
/// of one status.
pub async fn deliveries(
    db: &impl ConnectionTrait,
    endpoint_id: &str,
    status: Option<DeliveryStatus>,
    cursor: Option<&str>,
    limit: u64,
) -> Result<Vec<Delivery>, DbErr> {
    let mut q = delivery::Entity::find()
        .filter(delivery::Column::EndpointId.eq(endpoint_id))
        .order_by_desc(delivery::Column::Id)
        .limit(limit);
    if let Some(s) = status {
        q = q.filter(delivery::Column::Status.eq(s));
    }
    if let Some(c) = cursor {
        q = q.filter(delivery::Column::Id.lt(c));
    }
    q.all(db).await
}

/// One delivery of the endpoint, with every attempt in order.
pub async fn delivery(
    db: &impl ConnectionTrait,
    endpoint_id: &str,
    id: &str,
) -> Result<Option<(Delivery, Vec<attempt::Model>)>, DbErr> {
    let Some(d) = delivery::Entity::find_by_id(id.to_owned())
        .filter(delivery::Column::EndpointId.eq(endpoint_id))
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let attempts = attempt::Entity::find()
        .filter(attempt::Column::DeliveryId.eq(id))
        .order_by_asc(attempt::Column::Attempt)
        .all(db)
        .await?;
    Ok(Some((d, attempts)))
}

/// The state of one delivery of the endpoint (`None`: no such delivery).
pub async fn delivery_status(
    db: &impl ConnectionTrait,
    endpoint_id: &str,
    id: &str,
) -> Result<Option<DeliveryStatus>, DbErr> {
    Ok(delivery::Entity::find_by_id(id.to_owned())
        .filter(delivery::Column::EndpointId.eq(endpoint_id))
        .one(db)
        .await?
        .map(|d| d.status))
}

/// Sends a finished delivery (answered or given up) again: PENDING, retried for another
/// `give_up` from now. A second click before it runs changes nothing (its message is
/// the same attempt's).
pub async fn retry(
    db: &DatabaseConnection,
    endpoint_id: &str,
    id: &str,
    give_up: chrono::Duration,
) -> Result<Option<Delivery>, StoreError> {
    let txn = db.begin().await?;
    let Some(d) = delivery::Entity::find_by_id(id.to_owned())
        .filter(delivery::Column::EndpointId.eq(endpoint_id))
        .one(&txn)
        .await?
    else {
        return Ok(None);
    };
    if d.status == DeliveryStatus::Pending {
        return Err(StoreError::StillPending);
    }
    let now = Utc::now();
    let updated = delivery::Entity::update_many()
        .col_expr(
            delivery::Column::Status,
            Expr::value(DeliveryStatus::Pending),
        )
        .col_expr(delivery::Column::NextAttemptAt, Expr::value(Some(now)))
        .col_expr(delivery::Column::GiveUpAt, Expr::value(now + give_up))
        .filter(delivery::Column::Id.eq(id))
        .filter(delivery::Column::Status.is_in([DeliveryStatus::Failed, DeliveryStatus::Succeeded]))
        .filter(delivery::Column::Attempts.eq(d.attempts))
        .exec(&txn)
        .await?;
    if updated.rows_affected == 0 {
        return Err(StoreError::StillPending);
    }
    let message = Deliver {
        delivery_id: d.id.clone(),
        attempts: d.attempts,
    }
    .manual_envelope();
    outbox::enqueue(&txn, Target::Queue(&WEBHOOKS_DELIVER), &message, usize::MAX)
        .await
        .map_err(|e| DbErr::Custom(e.to_string()))?;
    txn.commit().await?;
    Ok(delivery::Entity::find_by_id(id.to_owned()).one(db).await?)
}
