//! Writing usage rows (in the step commit's transaction), reading a task's tokens so far,
//! and trimming old rows.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use sea_orm::{
    ActiveValue::Set, ColumnTrait as _, ConnectionTrait, DatabaseConnection, DbErr,
    EntityTrait as _, QueryFilter as _, QuerySelect as _,
};

use super::Usage;
use super::entity;
use super::pricing::Tokens;

/// One row to write: whose step, what it used, the credits charged on it.
pub struct Row<'a> {
    pub task_id: &'a str,
    pub user_id: &'a str,
    pub kind: &'a str,
    pub step: &'a str,
    pub usage: &'a Usage,
    pub credits: i64,
}

/// Writes `rows` in one statement.
pub async fn insert(txn: &impl ConnectionTrait, rows: &[Row<'_>]) -> Result<(), DbErr> {
    if rows.is_empty() {
        return Ok(());
    }
    let now = Utc::now();
    let models = rows.iter().map(|r| entity::ActiveModel {
        task_id: Set(r.task_id.to_owned()),
        user_id: Set(r.user_id.to_owned()),
        kind: Set(r.kind.to_owned()),
        step: Set(r.step.to_owned()),
        provider: Set(r.usage.provider.clone()),
        model: Set(r.usage.model.clone()),
        input_tokens: Set(r.usage.input_tokens),
        output_tokens: Set(r.usage.output_tokens),
        total_tokens: Set(r.usage.total_tokens),
        images: Set(r.usage.images),
        media_ms: Set(r.usage.media_ms),
        credits: Set(r.credits),
        created_at: Set(now),
        ..Default::default()
    });
    entity::Entity::insert_many(models)
        .exec_without_returning(txn)
        .await
        .map(|_| ())
}

/// The tokens the earlier steps of these tasks used, by task (one query).
pub async fn tokens_of(
    txn: &impl ConnectionTrait,
    task_ids: &[&str],
) -> Result<HashMap<String, Tokens>, DbErr> {
    if task_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let sum = |c: entity::Column| crate::db::integer_sum(txn, c);
    let rows: Vec<(String, i64, i64, i64)> = entity::Entity::find()
        .select_only()
        .column(entity::Column::TaskId)
        .expr(sum(entity::Column::InputTokens))
        .expr(sum(entity::Column::OutputTokens))
        .expr(sum(entity::Column::TotalTokens))
        .filter(entity::Column::TaskId.is_in(task_ids.iter().copied()))
        .group_by(entity::Column::TaskId)
        .into_tuple()
        .all(txn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, input, output, total)| {
            let t = Tokens {
                input,
                output,
                total,
            };
            (id, t)
        })
        .collect())
}

/// Rows older than the retention go.
pub fn trim(db: &DatabaseConnection, cutoff: DateTime<Utc>) -> BoxFuture<'_, Result<u64, DbErr>> {
    Box::pin(async move {
        let gone = entity::Entity::delete_many()
            .filter(entity::Column::CreatedAt.lt(cutoff))
            .exec(db)
            .await?;
        Ok(gone.rows_affected)
    })
}
