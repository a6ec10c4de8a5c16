//! Statuses and kinds stored as their names: one pattern for every such column.
//!
//! A status is an enum deriving sea-orm's `DeriveActiveEnum` (`rs_type = "String"`, each
//! variant's `string_value` the stored name) and `EnumIter`, with serde renamed to the
//! same names, so the row, the JSON and the OpenAPI `enum` agree. The column stays a
//! string in the migrations. `StoredName` gives every such enum the edge conversions
//! (request fields, query strings, counters) without a hand-written `match`:
//!
//! ```
//! use conveyor::db::StoredName;
//! use sea_orm::entity::prelude::{DeriveActiveEnum, EnumIter, StringLen};
//!
//! #[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, serde::Serialize)]
//! #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
//! #[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
//! pub enum DeliveryStatus {
//!     #[sea_orm(string_value = "PENDING")]
//!     Pending,
//!     #[sea_orm(string_value = "SUCCEEDED")]
//!     Succeeded,
//! }
//!
//! assert_eq!(DeliveryStatus::parse("SUCCEEDED"), Some(DeliveryStatus::Succeeded));
//! assert_eq!(DeliveryStatus::Pending.name(), "PENDING");
//! assert_eq!(DeliveryStatus::names(), ["PENDING", "SUCCEEDED"]);
//! assert_eq!(DeliveryStatus::parse("pending"), None);
//! ```

use sea_orm::{ActiveEnum, Iterable};

/// A string-stored enum: its names and the parse back.
pub trait StoredName: ActiveEnum<Value = String> + Iterable + Copy {
    /// The stored name (`PENDING`).
    fn name(self) -> String {
        self.to_value()
    }

    /// The variant stored as `s`, if any.
    fn parse(s: &str) -> Option<Self> {
        Self::iter().find(|v| v.to_value() == s)
    }

    /// Every stored name, in declaration order (for messages and patterns).
    fn names() -> Vec<String> {
        Self::iter().map(|v| v.to_value()).collect()
    }
}

impl<T: ActiveEnum<Value = String> + Iterable + Copy> StoredName for T {}
