//! The `ops_alerts` table: one row per alert episode, from firing to resolved, shared
//! by every API instance (the leader writes it, all read it).

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "ops_alerts")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    /// `backlog`, `oldest_message`, `slow_consumption` or `low_success`.
    pub rule: String,
    /// The queue's key.
    pub queue: String,
    #[sea_orm(column_type = "Text")]
    pub summary: String,
    /// The measured value when it fired, and the threshold it crossed.
    pub value: f64,
    pub threshold: f64,
    pub fired_at: DateTimeUtc,
    pub resolved_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
