//! The `dead_letter_actions` table: the audit trail of replays and discards.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "dead_letter_actions")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub dead_letter_id: i64,
    /// `replay` or `discard`.
    pub action: String,
    /// Who did it: `user:<id>` through the API, `cli:<login>` from the command line.
    pub actor: String,
    pub at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
