//! The queries of the payments flow. An event is applied by one conditional transition
//! of its inbox row (`RECEIVED → APPLIED`) in the same transaction as its effect, so
//! whoever applies it — the consumer, a redelivery, a replay — applies it once; the
//! payment's own `CREATED → PAID` transition makes a second event for the same payment
//! grant nothing.

use chrono::Utc;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, SqlErr,
};

use super::entity::{event, payment};
use crate::users::credits;

pub use event::Model as Event;
pub use payment::Model as Payment;

pub const CREATED: &str = "CREATED";
pub const PAID: &str = "PAID";
const RECEIVED: &str = "RECEIVED";
const APPLIED: &str = "APPLIED";

pub async fn create(
    db: &DatabaseConnection,
    user_id: &str,
    product: &str,
    credits: i64,
    amount: i64,
    currency: &str,
) -> Result<Payment, DbErr> {
    let p = payment::Model {
        id: uuid::Uuid::now_v7().to_string(),
        user_id: user_id.to_owned(),
        product: product.to_owned(),
        credits,
        amount,
        currency: currency.to_owned(),
        status: CREATED.to_owned(),
        created_at: Utc::now(),
        paid_at: None,
    };
    payment::Entity::insert(payment::ActiveModel::from(p.clone()))
        .exec_without_returning(db)
        .await?;
    Ok(p)
}

pub async fn get(db: &impl ConnectionTrait, id: &str) -> Result<Option<Payment>, DbErr> {
    payment::Entity::find_by_id(id.to_owned()).one(db).await
}

pub async fn events_of(db: &DatabaseConnection, payment_id: &str) -> Result<Vec<Event>, DbErr> {
    event::Entity::find()
        .filter(event::Column::PaymentId.eq(payment_id))
        .all(db)
        .await
}

/// Records a verified event in the caller's transaction; `None` when this provider's
/// event id is recorded already (a redelivery: nothing to do).
pub async fn receive(
    txn: &impl ConnectionTrait,
    provider: &str,
    event_id: &str,
    payment_id: &str,
) -> Result<Option<i64>, DbErr> {
    let row = event::ActiveModel {
        provider: Set(provider.to_owned()),
        event_id: Set(event_id.to_owned()),
        payment_id: Set(payment_id.to_owned()),
        kind: Set("paid".to_owned()),
        status: Set(RECEIVED.to_owned()),
        received_at: Set(Utc::now()),
        applied_at: Set(None),
        ..Default::default()
    };
    match event::Entity::insert(row).exec(txn).await {
        Ok(done) => Ok(Some(done.last_insert_id)),
        Err(e) if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => Ok(None),
        Err(e) => Err(e),
    }
}

/// What applying an event did.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// The payment turned PAID and its credits were granted.
    Granted {
        user_id: String,
        credits: i64,
    },
    /// The event was applied now, but the payment was paid before (another event).
    AlreadyPaid,
    /// Applied before: nothing done.
    Before,
    NoSuchEvent,
}

/// Applies inbox row `id` once, in one transaction with its effect.
pub async fn apply(db: &DatabaseConnection, id: i64) -> Result<Applied, DbErr> {
    let txn = crate::db::begin_read_committed(db).await?;
    let now = Utc::now();
    let moved = event::Entity::update_many()
        .col_expr(event::Column::Status, Expr::value(APPLIED))
        .col_expr(event::Column::AppliedAt, Expr::value(now))
        .filter(event::Column::Id.eq(id))
        .filter(event::Column::Status.eq(RECEIVED))
        .exec(&txn)
        .await?;
    if moved.rows_affected != 1 {
        txn.rollback().await?;
        let exists = event::Entity::find_by_id(id).one(db).await?.is_some();
        return Ok(if exists {
            Applied::Before
        } else {
            Applied::NoSuchEvent
        });
    }
    let ev = event::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(id.to_string()))?;
    let paid = payment::Entity::update_many()
        .col_expr(payment::Column::Status, Expr::value(PAID))
        .col_expr(payment::Column::PaidAt, Expr::value(now))
        .filter(payment::Column::Id.eq(ev.payment_id.as_str()))
        .filter(payment::Column::Status.eq(CREATED))
        .exec(&txn)
        .await?;
    let outcome = if paid.rows_affected == 1 {
        let p = get(&txn, &ev.payment_id)
            .await?
            .ok_or_else(|| DbErr::RecordNotFound(ev.payment_id.clone()))?;
        credits::grant(&txn, &p.user_id, p.credits, &format!("payment:{}", p.id)).await?;
        Applied::Granted {
            user_id: p.user_id,
            credits: p.credits,
        }
    } else {
        Applied::AlreadyPaid
    };
    txn.commit().await?;
    Ok(outcome)
}
