//! Tables of users, their API keys and their credit ledger.

pub mod user {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
    #[sea_orm(table_name = "users")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub name: String,
        /// Spendable balance; every change also writes a ledger row.
        pub credits: i64,
        pub is_admin: bool,
        pub created_at: DateTimeUtc,
        /// A member until then (bought memberships stack: a renewal extends this).
        pub member_until: Option<DateTimeUtc>,
        /// The organisation (team account) whose plan and limits the user shares.
        pub org_id: Option<String>,
        /// A plan an admin set (audited); it wins over a membership's.
        pub plan: Option<String>,
        /// The plan the latest membership payment granted (`None`: the configured
        /// membership plan).
        pub member_plan: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod org {
    use sea_orm::entity::prelude::*;

    /// An organisation: a team account whose members share one plan and one set of limits.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
    #[sea_orm(table_name = "orgs")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub name: String,
        /// The user who may add and remove members (a member too).
        pub owner_id: String,
        /// A plan an admin set; else the owner's.
        pub plan: Option<String>,
        pub created_at: DateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod api_key {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "api_keys")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub user_id: String,
        /// SHA-256 of the key, hex; the key itself is shown once and never stored.
        #[sea_orm(unique)]
        pub key_hash: String,
        /// The key's first characters, to tell keys apart in listings.
        pub prefix: String,
        pub created_at: DateTimeUtc,
        pub revoked_at: Option<DateTimeUtc>,
        /// A rotated key works until then.
        pub expires_at: Option<DateTimeUtc>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod ledger {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
    #[sea_orm(table_name = "credit_ledger")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub user_id: String,
        pub delta: i64,
        pub reason: String,
        /// Unique per effect (`grant:initial:<user>`, `reserve:<task>`, …): the same
        /// effect can never be booked twice.
        #[sea_orm(unique)]
        pub effect_key: String,
        pub created_at: DateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
