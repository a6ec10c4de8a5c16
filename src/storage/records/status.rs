//! A stored file's state, kept in its row as the state's name.

use sea_orm::entity::prelude::StringLen;

/// A stored file's state, stored as its name.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
    sea_orm::EnumIter,
    sea_orm::DeriveActiveEnum,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
pub enum ObjectStatus {
    /// Bytes on their way.
    #[sea_orm(string_value = "PENDING")]
    Pending,
    #[sea_orm(string_value = "READY")]
    Ready,
    /// See its `reason`.
    #[sea_orm(string_value = "REJECTED")]
    Rejected,
}

impl std::fmt::Display for ObjectStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::db::StoredName::name(*self))
    }
}
