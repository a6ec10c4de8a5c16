//! Credits: the only code that writes balances (`users.credits`) and the ledger. Every
//! function runs in the caller's transaction, so a balance moves together with the
//! effect that causes it (a task accepted, finished or canceled; a payment applied) and
//! its ledger row. Each ledger row carries a unique effect key (`reserve:<task>`,
//! `refund:<task>`, `payment:<payment>`): booking an effect twice fails on that key
//! instead of moving credits twice.
//!
//! A reservation takes the amount from the balance when the effect is accepted; it is
//! later consumed (kept) or refunded (given back).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::Utc;
use sea_orm::sea_query::{Expr, ExprTrait as _, LockType, SimpleExpr};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
};

use super::entity::{ledger, user};

/// A reservation the balance did not cover: the balance it had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Short {
    pub balance: i64,
}

/// One ledger row: (user, delta, reason, effect key).
pub type Entry<'a> = (String, i64, &'a str, String);

/// Takes `amount` from the user's balance if it covers it (one conditional UPDATE).
/// The caller books the ledger row ([`book`]) with the effect's key.
pub async fn reserve(
    txn: &impl ConnectionTrait,
    user_id: &str,
    amount: i64,
) -> Result<Result<(), Short>, DbErr> {
    if amount == 0 {
        return Ok(Ok(()));
    }
    let reserved = user::Entity::update_many()
        .col_expr(
            user::Column::Credits,
            Expr::col(user::Column::Credits).sub(amount),
        )
        .filter(user::Column::Id.eq(user_id))
        .filter(user::Column::Credits.gte(amount))
        .exec(txn)
        .await?;
    if reserved.rows_affected == 1 {
        return Ok(Ok(()));
    }
    let balance = user::Entity::find_by_id(user_id.to_owned())
        .one(txn)
        .await?
        .map(|u| u.credits)
        .unwrap_or(0);
    Ok(Err(Short { balance }))
}

/// Reserves a batch of (user, amount) in two statements however large it is: locks the
/// users' rows (in id order, so concurrent batches cannot deadlock on each other),
/// decides in batch order which amounts each balance covers, and takes each user's
/// covered total in one `UPDATE … CASE`. Per entry: reserved, or the balance it lacked.
pub async fn reserve_batch(
    txn: &impl ConnectionTrait,
    batch: &[(&str, i64)],
) -> Result<Vec<Result<(), Short>>, DbErr> {
    let ids: BTreeSet<&str> = batch
        .iter()
        .filter(|(_, amount)| *amount > 0)
        .map(|(id, _)| *id)
        .collect();
    if ids.is_empty() {
        return Ok(vec![Ok(()); batch.len()]);
    }
    let mut balances: HashMap<String, i64> = user::Entity::find()
        .select_only()
        .column(user::Column::Id)
        .column(user::Column::Credits)
        .filter(user::Column::Id.is_in(ids))
        .order_by_asc(user::Column::Id)
        .lock(LockType::Update)
        .into_tuple::<(String, i64)>()
        .all(txn)
        .await?
        .into_iter()
        .collect();
    let mut taken: BTreeMap<&str, i64> = BTreeMap::new();
    let reserved = batch
        .iter()
        .map(|&(user_id, amount)| {
            if amount == 0 {
                return Ok(());
            }
            let balance = balances.get_mut(user_id).ok_or(Short { balance: 0 })?;
            if *balance < amount {
                return Err(Short { balance: *balance });
            }
            *balance -= amount;
            *taken.entry(user_id).or_default() += amount;
            Ok(())
        })
        .collect();
    if let Some(total) = per_user(&taken) {
        user::Entity::update_many()
            .col_expr(
                user::Column::Credits,
                Expr::col(user::Column::Credits).sub(total),
            )
            .filter(user::Column::Id.is_in(taken.keys().copied()))
            .exec(txn)
            .await?;
    }
    Ok(reserved)
}

/// Reserves every user's total of the batch in one conditional statement if every
/// balance covers it; `false` when one does not, and then the caller must roll back
/// (some balances may have moved) and use [`reserve_batch`]. The common case costs one
/// statement instead of two, one round trip less on the commit path of every batch.
pub async fn reserve_batch_if_covered(
    txn: &impl ConnectionTrait,
    batch: &[(&str, i64)],
) -> Result<bool, DbErr> {
    let mut totals: BTreeMap<&str, i64> = BTreeMap::new();
    for &(user_id, amount) in batch.iter().filter(|(_, a)| *a > 0) {
        *totals.entry(user_id).or_default() += amount;
    }
    let Some(total) = per_user(&totals) else {
        return Ok(true);
    };
    // Every matched row changes (each total is positive), so rows affected = rows
    // matched on MySQL too.
    let charged = user::Entity::update_many()
        .col_expr(
            user::Column::Credits,
            Expr::col(user::Column::Credits).sub(total.clone()),
        )
        .filter(user::Column::Id.is_in(totals.keys().copied()))
        .filter(Expr::col(user::Column::Credits).gte(total))
        .exec(txn)
        .await?;
    Ok(charged.rows_affected == totals.len() as u64)
}

/// Keeps a reservation: the balance already paid it; the ledger records the effect.
pub async fn consume(
    txn: &impl ConnectionTrait,
    user_id: &str,
    effect_key: &str,
) -> Result<(), DbErr> {
    book(txn, user_id, 0, "consume", effect_key).await
}

/// Gives a reservation of `amount` back.
pub async fn refund(
    txn: &impl ConnectionTrait,
    user_id: &str,
    amount: i64,
    effect_key: &str,
) -> Result<(), DbErr> {
    add(txn, user_id, amount, "refund", effect_key).await
}

/// Adds `amount` (a purchase, a sign-up grant). Booked first: a second grant with the
/// same effect key fails before any balance moves.
pub async fn grant(
    txn: &impl ConnectionTrait,
    user_id: &str,
    amount: i64,
    effect_key: &str,
) -> Result<(), DbErr> {
    add(txn, user_id, amount, "grant", effect_key).await
}

/// Takes back up to `amount` granted before (a refunded purchase): as much as the balance
/// still holds, never below zero. Returns what it took; the caller records the rest (the
/// credits were spent already) as a shortfall instead of hiding it.
pub async fn take_back(
    txn: &impl ConnectionTrait,
    user_id: &str,
    amount: i64,
    effect_key: &str,
) -> Result<i64, DbErr> {
    let balance = user::Entity::find_by_id(user_id.to_owned())
        .lock(LockType::Update)
        .one(txn)
        .await?
        .map(|u| u.credits)
        .ok_or_else(|| DbErr::RecordNotFound(format!("user {user_id}")))?;
    let taken = Ord::max(Ord::min(amount, balance), 0);
    add(txn, user_id, -taken, "take_back", effect_key).await?;
    Ok(taken)
}

async fn add(
    txn: &impl ConnectionTrait,
    user_id: &str,
    amount: i64,
    reason: &str,
    effect_key: &str,
) -> Result<(), DbErr> {
    book(txn, user_id, amount, reason, effect_key).await?;
    if amount != 0 {
        user::Entity::update_many()
            .col_expr(
                user::Column::Credits,
                Expr::col(user::Column::Credits).add(amount),
            )
            .filter(user::Column::Id.eq(user_id))
            .exec(txn)
            .await?;
    }
    Ok(())
}

/// Writes one ledger row; a second row with the same `effect_key` fails with a unique
/// violation.
pub async fn book(
    txn: &impl ConnectionTrait,
    user_id: &str,
    delta: i64,
    reason: &str,
    effect_key: &str,
) -> Result<(), DbErr> {
    book_many(
        txn,
        &[(user_id.to_owned(), delta, reason, effect_key.to_owned())],
    )
    .await
}

/// Several ledger rows in one statement.
pub async fn book_many(txn: &impl ConnectionTrait, rows: &[Entry<'_>]) -> Result<(), DbErr> {
    if rows.is_empty() {
        return Ok(());
    }
    let now = Utc::now();
    let rows = rows
        .iter()
        .map(|(user_id, delta, reason, key)| ledger::ActiveModel {
            user_id: Set(user_id.clone()),
            delta: Set(*delta),
            reason: Set((*reason).to_owned()),
            effect_key: Set(key.clone()),
            created_at: Set(now),
            ..Default::default()
        });
    ledger::Entity::insert_many(rows)
        .exec_without_returning(txn)
        .await
        .map(|_| ())
}

/// `CASE id WHEN … THEN total … ELSE 0 END`: each user's amount in one expression, for
/// a single `UPDATE users` over a batch; `None` when there is nobody to charge.
fn per_user(totals: &BTreeMap<&str, i64>) -> Option<SimpleExpr> {
    let mut whens = totals
        .iter()
        .map(|(id, total)| (user::Column::Id.eq(*id), *total));
    let (cond, total) = whens.next()?;
    let case = whens.fold(Expr::case(cond, total), |c, (cond, total)| {
        c.case(cond, total)
    });
    Some(case.finally(0).into())
}
