//! Writing accepted orders, one or a batch in one transaction: orders already written
//! are skipped (a redelivery), each sale's `sold` moves once by its units (never past
//! `stock`), the orders and their two events (QUEUED, UNPAID) are inserted in one
//! statement each. Any refusal (no sale, sold out in the database, a buyer's second order
//! in a limit-one sale) fails the whole call, which writes nothing: the orders consumer
//! then writes a batch's orders one by one, so a refusal isolates only its message.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::Utc;
use sea_orm::sea_query::{Expr, ExprTrait as _};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect, SqlErr};

use super::OrderStatus;
use super::entity::{event, order, sale};
use super::messages::OrderEvent;
use super::store::{Order, WriteError, event_of, event_row, get_sale, unpaid};

/// One order to write.
pub struct NewOrder<'a> {
    pub order_id: &'a str,
    pub sale_id: &'a str,
    pub user_id: &'a str,
}

/// Which of `ids` name orders written already.
pub async fn written_ids<'a>(
    db: &impl ConnectionTrait,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<HashSet<String>, sea_orm::DbErr> {
    let ids: Vec<String> = ids.into_iter().map(str::to_owned).collect();
    Ok(order::Entity::find()
        .select_only()
        .column(order::Column::Id)
        .filter(order::Column::Id.is_in(ids))
        .into_tuple::<String>()
        .all(db)
        .await?
        .into_iter()
        .collect())
}

/// Writes the orders of `orders` not written yet, in `txn`; per order, its row and
/// events, or `None` when it was written already (or repeats one earlier in the batch).
pub async fn insert_orders(
    txn: &impl ConnectionTrait,
    orders: &[NewOrder<'_>],
    pay_within: chrono::Duration,
) -> Result<Vec<Option<(Order, [OrderEvent; 2])>>, WriteError> {
    let existing = written_ids(txn, orders.iter().map(|o| o.order_id)).await?;
    let mut seen = HashSet::new();
    let fresh: Vec<bool> = orders
        .iter()
        .map(|o| !existing.contains(o.order_id) && seen.insert(o.order_id))
        .collect();
    // Units per sale, the sales in one order: two batches lock them in the same order.
    let mut units: BTreeMap<&str, i32> = BTreeMap::new();
    for (o, _) in orders.iter().zip(&fresh).filter(|(_, f)| **f) {
        *units.entry(o.sale_id).or_default() += 1;
    }
    let mut sales = HashMap::new();
    for &sale_id in units.keys() {
        let sale = get_sale(txn, sale_id)
            .await?
            .ok_or_else(|| WriteError::NoSale(sale_id.to_owned()))?;
        sales.insert(sale_id, sale);
    }
    let now = Utc::now();
    let (mut rows, mut events, mut written) = (Vec::new(), Vec::new(), Vec::new());
    for (o, fresh) in orders.iter().zip(fresh) {
        let Some(sale) = sales.get(o.sale_id).filter(|_| fresh) else {
            written.push(None);
            continue;
        };
        let model = unpaid(o.order_id, sale, o.user_id, now, pay_within);
        let queued = event_of(&model, 1, OrderStatus::Queued, "accepted");
        let unpaid = event_of(&model, 2, OrderStatus::Unpaid, "awaiting payment");
        events.extend([event_row(&queued), event_row(&unpaid)]);
        rows.push(order::ActiveModel::from(model.clone()));
        written.push(Some((model, [queued, unpaid])));
    }
    if rows.is_empty() {
        return Ok(written);
    }
    // In statements of at most ROWS rows: a statement's parameters are bounded (65,535 on
    // PostgreSQL and MariaDB, 32,766 on SQLite), a batch of messages of several orders
    // is not.
    for rows in chunks(rows) {
        order::Entity::insert_many(rows)
            .exec_without_returning(txn)
            .await
            .map_err(|e| match e.sql_err() {
                // The sale, exact for one order (a batch is written one by one next).
                Some(SqlErr::UniqueConstraintViolation(_)) => WriteError::LimitReached(
                    units.keys().next().copied().unwrap_or_default().to_owned(),
                ),
                _ => WriteError::Db(e),
            })?;
    }
    for events in chunks(events) {
        event::Entity::insert_many(events)
            .exec_without_returning(txn)
            .await?;
    }
    // The units last: the sale's row is locked from here to the commit, so two batches
    // of one sale write their rows side by side and queue only for this.
    for (&sale_id, &n) in &units {
        let held = sale::Entity::update_many()
            .col_expr(sale::Column::Sold, Expr::col(sale::Column::Sold).add(n))
            .filter(sale::Column::Id.eq(sale_id))
            .filter(
                Expr::col(sale::Column::Sold)
                    .add(n)
                    .lte(Expr::col(sale::Column::Stock)),
            )
            .exec(txn)
            .await?;
        if held.rows_affected != 1 {
            return Err(WriteError::SoldOut(sale_id.to_owned()));
        }
    }
    Ok(written)
}

/// Rows per insert statement: 12 parameters an order row, 6 an event row.
const ROWS: usize = 1024;

fn chunks<T>(rows: Vec<T>) -> impl Iterator<Item = Vec<T>> {
    let mut rows = rows.into_iter().peekable();
    std::iter::from_fn(move || {
        rows.peek()?;
        Some(rows.by_ref().take(ROWS).collect())
    })
}
