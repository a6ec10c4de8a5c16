//! Tables of the payments flow.

pub mod payment {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "payments")]
    pub struct Model {
        /// Also our `out_trade_no` at the provider.
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub user_id: String,
        pub product: String,
        /// Credits the payment grants.
        pub credits: i64,
        /// In the currency's minor unit (fen, cents).
        pub amount: i64,
        pub currency: String,
        pub status: super::PaymentStatus,
        pub created_at: DateTimeUtc,
        pub paid_at: Option<DateTimeUtc>,
        /// The flash-sale order it pays, if it pays one.
        pub order_id: Option<String>,
        /// Months of membership it buys (0: none).
        pub membership_months: i32,
        /// The plan its membership grants (`None`: the configured membership plan).
        pub plan: Option<String>,
        /// Refunded so far, in the minor unit, and the credits that took back.
        pub refunded_amount: i64,
        pub refunded_credits: i64,
        /// Credits a refund should have taken back but the balance no longer held
        /// (spent already): recorded and alerted, never clamped away silently.
        pub shortfall: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod event {
    use sea_orm::entity::prelude::*;

    /// A verified provider event (the inbox).
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "payment_events")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub provider: String,
        pub event_id: String,
        pub payment_id: String,
        /// `paid`, `refund` (of `amount`) or `refund_total` (up to a total of `amount`).
        pub kind: String,
        pub status: super::EventStatus,
        pub received_at: DateTimeUtc,
        pub applied_at: Option<DateTimeUtc>,
        /// A refund's amount, or the refunded total (minor unit); 0 for `paid`.
        pub amount: i64,
        /// What applying it did, when that is worth telling (a shortfall, a refund due).
        pub note: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

use sea_orm::entity::prelude::StringLen;

/// A payment's state, stored as its name.
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
pub enum PaymentStatus {
    #[sea_orm(string_value = "CREATED")]
    Created,
    /// A CREATED intent nobody paid within `payments.intent_ttl_secs`: no longer counted
    /// as open. A payment that still arrives for it is granted as for CREATED (the money
    /// came).
    #[sea_orm(string_value = "EXPIRED")]
    Expired,
    #[sea_orm(string_value = "PAID")]
    Paid,
    /// All of it given back.
    #[sea_orm(string_value = "REFUNDED")]
    Refunded,
    /// Money received for a flash-sale order that was canceled first (or paid by another
    /// payment): nothing was delivered, the money goes back.
    #[sea_orm(string_value = "REFUND_DUE")]
    RefundDue,
}

/// An inbox event's state, stored as its name: `RECEIVED`, then `APPLIED` once, by
/// whoever applies it; `WAITING` while a refund waits for its payment to be applied
/// first (events out of order).
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
pub enum EventStatus {
    #[sea_orm(string_value = "RECEIVED")]
    Received,
    /// A refund before its payment.
    #[sea_orm(string_value = "WAITING")]
    Waiting,
    #[sea_orm(string_value = "APPLIED")]
    Applied,
}
