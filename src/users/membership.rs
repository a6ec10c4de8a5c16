//! Memberships: the only code that moves `users.member_until`. Bought periods stack: a
//! renewal starts where the current membership ends (or now, if it has lapsed), so paying
//! twice in a row buys two periods, never one. Like credits, each change runs in the
//! caller's transaction and books a ledger row (delta 0) under the effect's unique key, so
//! the same effect can never move the date twice. Months are calendar months: a renewal
//! from the 31st ends on the last day of a shorter month (chrono's rule).

use chrono::{DateTime, Months, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};

use super::entity::user;
use super::{User, credits};

async fn set(txn: &impl ConnectionTrait, user_id: &str, until: DateTime<Utc>) -> Result<(), DbErr> {
    user::Entity::update_many()
        .col_expr(
            user::Column::MemberUntil,
            Expr::value(crate::db::utc_value(txn, until)),
        )
        .filter(user::Column::Id.eq(user_id))
        .exec(txn)
        .await
        .map(|_| ())
}

/// Adds `months` from the later of now and the current expiry; the new expiry. `user` is
/// the row as [`super::lock`] read it: the caller holds its lock, taken before any ledger
/// row of the transaction.
pub async fn extend(
    txn: &impl ConnectionTrait,
    user: &User,
    months: u32,
    effect_key: &str,
) -> Result<DateTime<Utc>, DbErr> {
    let now = Utc::now();
    let from = user.member_until.filter(|u| *u > now).unwrap_or(now);
    credits::book(txn, &user.id, 0, "membership", effect_key).await?;
    let until = from
        .checked_add_months(Months::new(months))
        .ok_or_else(|| DbErr::Custom(format!("membership of {months} months overflows")))?;
    set(txn, &user.id, until).await?;
    Ok(until)
}

/// Takes `months` back (a refunded membership): the expiry moves back by them, and the
/// membership ends now at the latest (never a date in the past made to look active).
pub async fn revoke(
    txn: &impl ConnectionTrait,
    user_id: &str,
    months: u32,
    effect_key: &str,
) -> Result<(), DbErr> {
    // The row lock before the ledger row (see `users::lock`).
    let current = super::lock(txn, user_id).await?.member_until;
    credits::book(txn, user_id, 0, "membership_revoked", effect_key).await?;
    let Some(until) = current else {
        return Ok(());
    };
    let back = until
        .checked_sub_months(Months::new(months))
        .unwrap_or(until);
    let now = Utc::now();
    let until = if back < now { now.min(until) } else { back };
    set(txn, user_id, until).await
}
