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
        /// `CREATED`, `PAID`, `REFUNDED` (all of it given back) or `REFUND_DUE` (paid
        /// for a flash-sale order that was canceled first: the money goes back).
        pub status: String,
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
        /// `RECEIVED`, then `APPLIED` once, by whoever applies it; `WAITING` while a
        /// refund waits for its payment to be applied first (events out of order).
        pub status: String,
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
