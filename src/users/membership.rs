//! Memberships: the only code that moves `users.member_until`. Bought periods stack: a
//! renewal starts where the current membership ends (or now, if it has lapsed), so paying
//! twice in a row buys two periods, never one. Like credits, each change runs in the
//! caller's transaction and books a ledger row (delta 0) under the effect's unique key, so
//! the same effect can never move the date twice. Months are calendar months: a renewal
//! from the 31st ends on the last day of a shorter month (chrono's rule).

use chrono::{DateTime, Months, Utc};
use sea_orm::sea_query::{Expr, LockType};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseBackend, DbErr, EntityTrait, QueryFilter, QuerySelect,
};

use super::credits;
use super::entity::user;

/// Locks the user's row and reads their expiry.
async fn current(
    txn: &impl ConnectionTrait,
    user_id: &str,
) -> Result<Option<DateTime<Utc>>, DbErr> {
    user::Entity::find_by_id(user_id.to_owned())
        .lock(LockType::Update)
        .one(txn)
        .await?
        .map(|u| u.member_until)
        .ok_or_else(|| DbErr::RecordNotFound(format!("user {user_id}")))
}

async fn set(txn: &impl ConnectionTrait, user_id: &str, until: DateTime<Utc>) -> Result<(), DbErr> {
    // MySQL/MariaDB: the column is a DATETIME (TIMESTAMP ends in 2038) and a zoned value is
    // sent as a TIMESTAMP, which MariaDB turns into NULL past 2038: send it naive (UTC).
    let value = if txn.get_database_backend() == DatabaseBackend::MySql {
        Expr::value(until.naive_utc())
    } else {
        Expr::value(until)
    };
    user::Entity::update_many()
        .col_expr(user::Column::MemberUntil, value)
        .filter(user::Column::Id.eq(user_id))
        .exec(txn)
        .await
        .map(|_| ())
}

/// Adds `months` from the later of now and the current expiry; the new expiry.
pub async fn extend(
    txn: &impl ConnectionTrait,
    user_id: &str,
    months: u32,
    effect_key: &str,
) -> Result<DateTime<Utc>, DbErr> {
    // The row lock before the ledger row (see `users::lock`).
    let now = Utc::now();
    let from = current(txn, user_id)
        .await?
        .filter(|u| *u > now)
        .unwrap_or(now);
    credits::book(txn, user_id, 0, "membership", effect_key).await?;
    let until = from
        .checked_add_months(Months::new(months))
        .ok_or_else(|| DbErr::Custom(format!("membership of {months} months overflows")))?;
    set(txn, user_id, until).await?;
    Ok(until)
}

/// Takes `months` back (a refunded membership): the expiry moves back by them, and the
/// membership ends now at the latest (never a date in the past made to look active).
pub async fn revoke(
    txn: &impl ConnectionTrait,
    user_id: &str,
    months: u32,
    effect_key: &str,
) -> Result<Option<DateTime<Utc>>, DbErr> {
    let current = current(txn, user_id).await?;
    credits::book(txn, user_id, 0, "membership_revoked", effect_key).await?;
    let Some(until) = current else {
        return Ok(None);
    };
    let back = until
        .checked_sub_months(Months::new(months))
        .unwrap_or(until)
        .min(until);
    let now = Utc::now();
    let until = if back < now { now.min(until) } else { back };
    set(txn, user_id, until).await?;
    Ok(Some(until))
}
