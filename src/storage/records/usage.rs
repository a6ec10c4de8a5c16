//! Bytes a tenant holds: reserved before bytes are written (one conditional update, so
//! two uploads racing cannot both cross the quota), released when a write fails or a
//! file goes.

use sea_orm::sea_query::{Expr, ExprTrait as _, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait as _, ConnectionTrait, DbErr, EntityTrait as _, QueryFilter as _,
};

use super::entity::usage::{ActiveModel, Column, Entity};

/// Adds `bytes` to `user`'s usage if that stays within `quota`. `false`: it would not.
pub async fn reserve(
    db: &impl ConnectionTrait,
    user: &str,
    bytes: u64,
    quota: u64,
) -> Result<bool, DbErr> {
    ensure_row(db, user).await?;
    let (bytes, quota) = (bytes as i64, Ord::min(quota, i64::MAX as u64) as i64);
    let done = Entity::update_many()
        .col_expr(Column::Bytes, Expr::col(Column::Bytes).add(bytes))
        .filter(Column::UserId.eq(user))
        .filter(Expr::col(Column::Bytes).add(bytes).lte(quota))
        .exec(db)
        .await?;
    Ok(done.rows_affected == 1)
}

/// Adds `bytes` whatever the quota (files the platform made, already paid for).
pub async fn add(db: &impl ConnectionTrait, user: &str, bytes: i64) -> Result<(), DbErr> {
    ensure_row(db, user).await?;
    Entity::update_many()
        .col_expr(Column::Bytes, Expr::col(Column::Bytes).add(bytes))
        .filter(Column::UserId.eq(user))
        .exec(db)
        .await?;
    Ok(())
}

/// The tenant's row, at zero if it was missing. (`do_nothing_on`: MySQL has no
/// `ON CONFLICT DO NOTHING`; sea-query writes a no-op update there.)
async fn ensure_row(db: &impl ConnectionTrait, user: &str) -> Result<(), DbErr> {
    Entity::insert(ActiveModel {
        user_id: Set(user.to_owned()),
        bytes: Set(0),
    })
    .on_conflict(
        OnConflict::column(Column::UserId)
            .do_nothing_on([Column::UserId])
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(())
}

/// Gives back `bytes` (never below zero).
pub async fn release(db: &impl ConnectionTrait, user: &str, bytes: i64) -> Result<(), DbErr> {
    if bytes <= 0 {
        return Ok(());
    }
    Entity::update_many()
        .col_expr(
            Column::Bytes,
            Expr::case(
                Expr::col(Column::Bytes).gt(bytes),
                Expr::col(Column::Bytes).sub(bytes),
            )
            .finally(0)
            .into(),
        )
        .filter(Column::UserId.eq(user))
        .exec(db)
        .await?;
    Ok(())
}

/// `user`'s bytes held.
pub async fn used(db: &impl ConnectionTrait, user: &str) -> Result<u64, DbErr> {
    Ok(Entity::find_by_id(user.to_owned())
        .one(db)
        .await?
        .map_or(0, |u| Ord::max(u.bytes, 0) as u64))
}
