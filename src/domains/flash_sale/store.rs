//! The queries of the flash-sale flow. Every order transition is one conditional UPDATE
//! (`… WHERE status = 'UNPAID'`), so a cancel and a payment racing each other cannot both
//! win; each appends an event with the next sequence number in the same transaction. The
//! sale's `sold` counter moves in the same transactions and never passes `stock`: the
//! database is the oversell backstop behind Redis.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait as _};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
};

use super::OrderStatus;
use super::entity::{event, order, sale};
use super::messages::OrderEvent;
use super::notify::Notices;

pub use order::Model as Order;
pub use sale::Model as Sale;

/// Why an order could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("no such sale {0}")]
    NoSale(String),
    /// The database says every unit is held already (Redis let one too many through).
    #[error("sale {0} is sold out in the database")]
    SoldOut(String),
    /// The buyer already holds an order in this limit-one sale.
    #[error("the buyer already holds an order in sale {0}")]
    LimitReached(String),
    #[error(transparent)]
    Db(#[from] DbErr),
}

#[derive(Debug, Clone)]
pub struct NewSale {
    pub item: String,
    pub price: i64,
    pub stock: i32,
    pub per_user_limit: i32,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
}

pub async fn create_sale(db: &DatabaseConnection, new: NewSale) -> Result<Sale, DbErr> {
    let sale = sale::Model {
        id: uuid::Uuid::now_v7().to_string(),
        item: new.item,
        price: new.price,
        stock: new.stock,
        per_user_limit: new.per_user_limit,
        sold: 0,
        starts_at: new.starts_at,
        ends_at: new.ends_at,
        created_at: Utc::now(),
    };
    sale::Entity::insert(sale::ActiveModel::from(sale.clone()))
        .exec_without_returning(db)
        .await?;
    Ok(sale)
}

pub async fn get_sale(db: &impl ConnectionTrait, id: &str) -> Result<Option<Sale>, DbErr> {
    sale::Entity::find_by_id(id.to_owned()).one(db).await
}

/// Sales, newest first, after `cursor` (a sale id).
pub async fn list_sales(
    db: &DatabaseConnection,
    cursor: Option<&str>,
    limit: u64,
) -> Result<Vec<Sale>, DbErr> {
    let mut q = sale::Entity::find().order_by_desc(sale::Column::Id);
    if let Some(c) = cursor {
        q = q.filter(sale::Column::Id.lt(c));
    }
    q.limit(limit).all(db).await
}

/// Sales whose window is open or ahead (reconciliation and warming look at these).
pub async fn running_sales(db: &DatabaseConnection) -> Result<Vec<Sale>, DbErr> {
    sale::Entity::find()
        .filter(sale::Column::EndsAt.gt(Utc::now()))
        .all(db)
        .await
}

/// Units held by live orders (UNPAID or PAID) per buyer of a sale.
pub async fn bought(db: &DatabaseConnection, sale_id: &str) -> Result<Vec<(String, i64)>, DbErr> {
    order::Entity::find()
        .select_only()
        .column(order::Column::UserId)
        .column_as(order::Column::Id.count(), "n")
        .filter(order::Column::SaleId.eq(sale_id))
        .filter(order::Column::Status.is_in([OrderStatus::Unpaid, OrderStatus::Paid]))
        .group_by(order::Column::UserId)
        .into_tuple::<(String, i64)>()
        .all(db)
        .await
}

/// Live orders (UNPAID + PAID) of a sale.
pub async fn live_orders(db: &DatabaseConnection, sale_id: &str) -> Result<u64, DbErr> {
    order::Entity::find()
        .filter(order::Column::SaleId.eq(sale_id))
        .filter(order::Column::Status.is_in([OrderStatus::Unpaid, OrderStatus::Paid]))
        .count(db)
        .await
}

/// A new order of `sale` as it is written: UNPAID, its two events' sequence, its deadline.
pub(super) fn unpaid(
    order_id: &str,
    sale: &Sale,
    user_id: &str,
    now: DateTime<Utc>,
    pay_within: chrono::Duration,
) -> Order {
    order::Model {
        id: order_id.to_owned(),
        sale_id: sale.id.clone(),
        user_id: user_id.to_owned(),
        limit_key: (sale.per_user_limit == 1).then(|| user_id.to_owned()),
        price: sale.price,
        status: OrderStatus::Unpaid,
        seq: 2,
        pay_by: now + pay_within,
        payment_ref: None,
        late_payment_ref: None,
        created_at: now,
        updated_at: now,
    }
}

pub(super) fn event_row(ev: &OrderEvent) -> event::ActiveModel {
    event::ActiveModel {
        order_id: Set(ev.order_id.clone()),
        seq: Set(ev.seq),
        status: Set(ev.status),
        message: Set(ev.message.clone()),
        created_at: Set(ev.at),
        ..Default::default()
    }
}

pub(super) fn event_of(o: &Order, seq: i32, status: OrderStatus, message: &str) -> OrderEvent {
    OrderEvent {
        order_id: o.id.clone(),
        user_id: o.user_id.clone(),
        seq,
        status,
        message: Some(message.to_owned()),
        at: Utc::now(),
    }
}

/// Moves an order from UNPAID to `to` (PAID or CANCELED) with its event; `None` when it
/// was not UNPAID (someone else won). A cancel gives the unit back to the sale's `sold`.
async fn leave_unpaid(
    txn: &impl ConnectionTrait,
    notices: &Notices,
    order_id: &str,
    to: OrderStatus,
    payment_ref: Option<&str>,
    message: &str,
) -> Result<Option<(Order, OrderEvent)>, DbErr> {
    let now = Utc::now();
    let mut q = order::Entity::update_many()
        .col_expr(order::Column::Status, Expr::value(to))
        .col_expr(order::Column::Seq, Expr::col(order::Column::Seq).add(1))
        .col_expr(order::Column::UpdatedAt, Expr::value(now));
    if let Some(r) = payment_ref {
        q = q.col_expr(order::Column::PaymentRef, Expr::value(r));
    }
    let moved = q
        .filter(order::Column::Id.eq(order_id))
        .filter(order::Column::Status.eq(OrderStatus::Unpaid))
        .exec(txn)
        .await?;
    if moved.rows_affected != 1 {
        return Ok(None);
    }
    let o = order::Entity::find_by_id(order_id.to_owned())
        .one(txn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(order_id.to_owned()))?;
    if to == OrderStatus::Canceled {
        sale::Entity::update_many()
            .col_expr(sale::Column::Sold, Expr::col(sale::Column::Sold).sub(1))
            .filter(sale::Column::Id.eq(o.sale_id.as_str()))
            .exec(txn)
            .await?;
    }
    let ev = event_of(&o, o.seq, to, message);
    event::Entity::insert(event_row(&ev))
        .exec_without_returning(txn)
        .await?;
    notices.left_unpaid(txn, &o).await?;
    Ok(Some((o, ev)))
}

/// UNPAID → CANCELED (its own transaction); `None` when it was not UNPAID.
pub async fn cancel_unpaid(
    db: &DatabaseConnection,
    notices: &Notices,
    order_id: &str,
) -> Result<Option<(Order, OrderEvent)>, DbErr> {
    let txn = crate::db::begin_read_committed(db).await?;
    let done = leave_unpaid(
        &txn,
        notices,
        order_id,
        OrderStatus::Canceled,
        None,
        "payment window passed",
    )
    .await?;
    if done.is_some() {
        txn.commit().await?;
    } else {
        txn.rollback().await?;
    }
    Ok(done)
}

/// What [`mark_paid`] did.
#[derive(Debug)]
pub enum Paid {
    /// UNPAID → PAID now.
    Now(Order, OrderEvent),
    /// Paid before (with this or another reference).
    Already(Order),
    /// The order was canceled first: the payment is recorded for refund, the order
    /// stays CANCELED.
    AfterCancel(Order),
}

/// Marks an order paid by `payment_ref` in the caller's transaction: the conditional
/// UNPAID → PAID transition the payment domain applies together with its inbox row. A
/// payment after the cancel never resurrects the order; it is recorded on the order
/// (`late_payment_ref`) for refund.
pub async fn pay(
    txn: &impl ConnectionTrait,
    notices: &Notices,
    order_id: &str,
    payment_ref: &str,
) -> Result<Option<Paid>, DbErr> {
    let paid = OrderStatus::Paid;
    if let Some((o, ev)) =
        leave_unpaid(txn, notices, order_id, paid, Some(payment_ref), "paid").await?
    {
        return Ok(Some(Paid::Now(o, ev)));
    }
    let Some(o) = get_order(txn, order_id).await? else {
        return Ok(None);
    };
    match o.status {
        OrderStatus::Canceled => {
            order::Entity::update_many()
                .col_expr(order::Column::LatePaymentRef, Expr::value(payment_ref))
                .filter(order::Column::Id.eq(order_id))
                .filter(order::Column::LatePaymentRef.is_null())
                .exec(txn)
                .await?;
            let o = get_order(txn, order_id).await?.unwrap_or(o);
            Ok(Some(Paid::AfterCancel(o)))
        }
        _ => Ok(Some(Paid::Already(o))),
    }
}

/// [`pay`] in a transaction of its own (an operator marking an order paid by hand).
pub async fn mark_paid(
    db: &DatabaseConnection,
    notices: &Notices,
    order_id: &str,
    payment_ref: &str,
) -> Result<Option<Paid>, DbErr> {
    let txn = crate::db::begin_read_committed(db).await?;
    let paid = pay(&txn, notices, order_id, payment_ref).await?;
    txn.commit().await?;
    Ok(paid)
}

pub async fn get_order(db: &impl ConnectionTrait, id: &str) -> Result<Option<Order>, DbErr> {
    order::Entity::find_by_id(id.to_owned()).one(db).await
}

/// A buyer's orders, newest first, after `cursor` (an order id).
pub async fn list_orders(
    db: &DatabaseConnection,
    user_id: &str,
    status: Option<OrderStatus>,
    cursor: Option<&str>,
    limit: u64,
) -> Result<Vec<Order>, DbErr> {
    let mut q = order::Entity::find()
        .filter(order::Column::UserId.eq(user_id))
        .order_by_desc(order::Column::Id);
    if let Some(s) = status {
        q = q.filter(order::Column::Status.eq(s));
    }
    if let Some(c) = cursor {
        q = q.filter(order::Column::Id.lt(c));
    }
    q.limit(limit).all(db).await
}

/// UNPAID orders whose deadline passed before `cutoff` (the sweep's catch).
pub async fn overdue(
    db: &DatabaseConnection,
    cutoff: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<Order>, DbErr> {
    order::Entity::find()
        .filter(order::Column::Status.eq(OrderStatus::Unpaid))
        .filter(order::Column::PayBy.lt(cutoff))
        .order_by_asc(order::Column::PayBy)
        .limit(limit)
        .all(db)
        .await
}

/// Orders per status, for the gauges.
pub async fn orders_by_status(db: &DatabaseConnection) -> Result<Vec<(OrderStatus, i64)>, DbErr> {
    order::Entity::find()
        .select_only()
        .column(order::Column::Status)
        .column_as(order::Column::Id.count(), "n")
        .group_by(order::Column::Status)
        .into_tuple::<(OrderStatus, i64)>()
        .all(db)
        .await
}

/// An order's stored events after `after_seq`.
pub async fn events_after(
    db: &impl ConnectionTrait,
    order_id: &str,
    after_seq: i32,
) -> Result<Vec<event::Model>, DbErr> {
    event::Entity::find()
        .filter(event::Column::OrderId.eq(order_id))
        .filter(event::Column::Seq.gt(after_seq))
        .order_by_asc(event::Column::Seq)
        .all(db)
        .await
}
