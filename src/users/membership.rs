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
    set_with_plan(txn, user_id, until, None).await
}

/// Sets the expiry, and the plan granted when `plan` is given (`Some(None)`: the
/// configured membership plan).
async fn set_with_plan(
    txn: &impl ConnectionTrait,
    user_id: &str,
    until: DateTime<Utc>,
    plan: Option<Option<&str>>,
) -> Result<(), DbErr> {
    let mut update = user::Entity::update_many().col_expr(
        user::Column::MemberUntil,
        Expr::value(crate::db::utc_value(txn, until)),
    );
    if let Some(plan) = plan {
        update = update.col_expr(
            user::Column::MemberPlan,
            Expr::value(plan.map(str::to_owned)),
        );
    }
    update
        .filter(user::Column::Id.eq(user_id))
        .exec(txn)
        .await
        .map(|_| ())
}

/// Adds `months` from the later of now and the current expiry; the new expiry. The
/// membership grants `plan` from now on (`None`: the configured membership plan): the
/// latest purchase names the plan. `user` is the row as [`super::lock`] read it: the
/// caller holds its lock, taken before any ledger row of the transaction.
pub async fn extend(
    txn: &impl ConnectionTrait,
    user: &User,
    months: u32,
    plan: Option<&str>,
    effect_key: &str,
) -> Result<DateTime<Utc>, DbErr> {
    let now = Utc::now();
    let from = user.member_until.filter(|u| *u > now).unwrap_or(now);
    credits::book(txn, &user.id, 0, "membership", effect_key).await?;
    let until = from
        .checked_add_months(Months::new(months))
        .ok_or_else(|| DbErr::Custom(format!("membership of {months} months overflows")))?;
    set_with_plan(txn, &user.id, until, Some(plan)).await?;
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
