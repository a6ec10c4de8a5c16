//! Order statuses: `QUEUED` (accepted, the row not yet written) → `UNPAID` → `PAID` or
//! `CANCELED`. Stored as their names and read back as this enum by the entity.

use sea_orm::entity::prelude::{DeriveActiveEnum, EnumIter, StringLen};
use serde::{Deserialize, Serialize};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    EnumIter,
    DeriveActiveEnum,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
pub enum OrderStatus {
    /// Accepted at intake (a unit taken in Redis); only ever an answer and an event,
    /// never a row.
    #[sea_orm(string_value = "QUEUED")]
    Queued,
    #[sea_orm(string_value = "UNPAID")]
    Unpaid,
    #[sea_orm(string_value = "PAID")]
    Paid,
    #[sea_orm(string_value = "CANCELED")]
    Canceled,
}

impl OrderStatus {
    pub const ALL: [OrderStatus; 4] = [
        OrderStatus::Queued,
        OrderStatus::Unpaid,
        OrderStatus::Paid,
        OrderStatus::Canceled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::Queued => "QUEUED",
            OrderStatus::Unpaid => "UNPAID",
            OrderStatus::Paid => "PAID",
            OrderStatus::Canceled => "CANCELED",
        }
    }

    pub fn parse(s: &str) -> Option<OrderStatus> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, OrderStatus::Paid | OrderStatus::Canceled)
    }
}
