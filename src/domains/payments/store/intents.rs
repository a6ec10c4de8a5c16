//! Payment intents: created by buyers, read by them, counted while open, expired when
//! nobody paid them in time.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder,
};

use super::{Event, Payment, PaymentStatus};
use crate::domains::payments::entity::{event, payment};

/// What a new payment buys.
#[derive(Debug, Clone)]
pub struct NewPayment {
    /// A product of `[payments.products]`, or `order` for a flash-sale order.
    pub product: String,
    pub credits: i64,
    pub membership_months: i32,
    /// The plan the membership grants (`None`: the configured membership plan).
    pub plan: Option<String>,
    pub order_id: Option<String>,
    pub amount: i64,
    pub currency: String,
}

pub async fn create(
    db: &impl ConnectionTrait,
    user_id: &str,
    new: NewPayment,
) -> Result<Payment, DbErr> {
    let p = payment::Model {
        id: uuid::Uuid::now_v7().to_string(),
        user_id: user_id.to_owned(),
        product: new.product,
        credits: new.credits,
        amount: new.amount,
        currency: new.currency,
        status: PaymentStatus::Created,
        created_at: Utc::now(),
        paid_at: None,
        order_id: new.order_id,
        membership_months: new.membership_months,
        plan: new.plan,
        refunded_amount: 0,
        refunded_credits: 0,
        shortfall: 0,
    };
    payment::Entity::insert(payment::ActiveModel::from(p.clone()))
        .exec_without_returning(db)
        .await?;
    Ok(p)
}

/// The user's unpaid (CREATED) intents.
pub async fn count_open(db: &impl ConnectionTrait, user_id: &str) -> Result<u64, DbErr> {
    payment::Entity::find()
        .filter(payment::Column::UserId.eq(user_id))
        .filter(payment::Column::Status.eq(PaymentStatus::Created))
        .count(db)
        .await
}

/// CREATED intents created before `before` become EXPIRED; how many did.
pub async fn expire_unpaid(db: &DatabaseConnection, before: DateTime<Utc>) -> Result<u64, DbErr> {
    let done = payment::Entity::update_many()
        .col_expr(payment::Column::Status, Expr::value(PaymentStatus::Expired))
        .filter(payment::Column::Status.eq(PaymentStatus::Created))
        .filter(payment::Column::CreatedAt.lt(before))
        .exec(db)
        .await?;
    Ok(done.rows_affected)
}

pub async fn get(db: &impl ConnectionTrait, id: &str) -> Result<Option<Payment>, DbErr> {
    payment::Entity::find_by_id(id.to_owned()).one(db).await
}

/// A payment's events, in the order they arrived.
pub async fn events_of(db: &impl ConnectionTrait, payment_id: &str) -> Result<Vec<Event>, DbErr> {
    event::Entity::find()
        .filter(event::Column::PaymentId.eq(payment_id))
        .order_by_asc(event::Column::Id)
        .all(db)
        .await
}
