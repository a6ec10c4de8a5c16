//! Tables of the flash-sale flow.

pub mod sale {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "flash_sales")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub item: String,
        /// Price of one unit, in credits (charged when the order is paid).
        pub price: i64,
        /// Units for sale.
        pub stock: i32,
        pub per_user_limit: i32,
        /// Units held by live orders (UNPAID or PAID); never above `stock`.
        pub sold: i32,
        pub starts_at: DateTimeUtc,
        pub ends_at: DateTimeUtc,
        pub created_at: DateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod order {
    use sea_orm::entity::prelude::*;

    use crate::domains::flash_sale::OrderStatus;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "orders")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub sale_id: String,
        pub user_id: String,
        /// The user id when the sale's limit is one: unique with the sale.
        pub limit_key: Option<String>,
        pub price: i64,
        pub status: OrderStatus,
        /// Sequence number of the last event.
        pub seq: i32,
        /// The payment deadline.
        pub pay_by: DateTimeUtc,
        pub payment_ref: Option<String>,
        pub late_payment_ref: Option<String>,
        pub created_at: DateTimeUtc,
        pub updated_at: DateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod event {
    use sea_orm::entity::prelude::*;

    use crate::domains::flash_sale::OrderStatus;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "order_events")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub order_id: String,
        pub seq: i32,
        pub status: OrderStatus,
        #[sea_orm(column_type = "Text", nullable)]
        pub message: Option<String>,
        pub created_at: DateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
