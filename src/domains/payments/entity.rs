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
        /// `CREATED` or `PAID`.
        pub status: String,
        pub created_at: DateTimeUtc,
        pub paid_at: Option<DateTimeUtc>,
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
        /// `paid`.
        pub kind: String,
        /// `RECEIVED`, then `APPLIED` once, by whoever applies it.
        pub status: String,
        pub received_at: DateTimeUtc,
        pub applied_at: Option<DateTimeUtc>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
