//! The `dead_letters` table: every dead-lettered message with its reason and history.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "dead_letters")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub message_id: String,
    /// The work queue's key (`ai.short`).
    pub queue: String,
    pub kind: String,
    /// `malformed`, `permanent`, `exhausted` or `crash_loop`.
    pub reason: String,
    pub attempts: i32,
    #[sea_orm(column_type = "Text")]
    pub last_error: String,
    /// JSON array of failures (attempt, queue, error, at).
    #[sea_orm(column_type = "Text")]
    pub history: String,
    /// The message body as received (an envelope, or the raw bytes of a malformed one).
    #[sea_orm(column_type = "Text")]
    pub body: String,
    /// `dead`, `replayed` or `discarded`.
    pub status: String,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    /// What the message was about: its correlation id (a task, an order, a payment, a
    /// material, a webhook delivery). Indexed.
    pub business_id: Option<String>,
    /// The consumer instance that handled it last (`host:pid:run`).
    pub consumer: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
