//! The `canary_pings` table: one row per ping, stamped when it comes back.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "canary_pings")]
pub struct Model {
    /// The ping's message id (a UUIDv7, so ids sort by send time).
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub sent_at: DateTimeUtc,
    /// `None` while the ping is on its way (or lost: the gauges tell which).
    pub received_at: Option<DateTimeUtc>,
    /// Send to receipt, measured on the clocks of the processes that sent and took it.
    pub latency_ms: Option<i64>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
