//! The webhooks tables: endpoints, events, deliveries and their attempts.

pub mod endpoint {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "webhook_endpoints")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub user_id: String,
        pub url: String,
        pub description: String,
        /// A JSON array of event types; empty: every type.
        pub event_types: String,
        pub enabled: bool,
        /// `whsec_` + base64: signs every delivery.
        pub secret: String,
        /// The secret a rotation replaced: deliveries are signed with both until
        /// `previous_until`, so a receiver can switch without missing one.
        pub previous_secret: Option<String>,
        pub previous_until: Option<DateTimeUtc>,
        /// Why the platform disabled it (failing for days); `None` when its owner did.
        pub disabled_reason: Option<String>,
        /// Since when every delivery to it has failed (`None`: the last one succeeded).
        pub failing_since: Option<DateTimeUtc>,
        pub created_at: DateTimeUtc,
        pub updated_at: DateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod event {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "webhook_events")]
    pub struct Model {
        /// `evt_…`: the `webhook-id` of every delivery of it, retries included.
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub user_id: String,
        pub event_type: String,
        /// The body every endpoint receives.
        #[sea_orm(column_type = "Text")]
        pub payload: String,
        pub created_at: DateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod delivery {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "webhook_deliveries")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub event_id: String,
        pub endpoint_id: String,
        pub user_id: String,
        pub event_type: String,
        pub status: super::DeliveryStatus,
        pub attempts: i32,
        pub next_attempt_at: Option<DateTimeUtc>,
        /// After this a failed attempt is the last.
        pub give_up_at: DateTimeUtc,
        pub last_status: Option<i32>,
        pub last_response: Option<String>,
        pub last_latency_ms: Option<i32>,
        pub last_error: Option<String>,
        pub created_at: DateTimeUtc,
        pub delivered_at: Option<DateTimeUtc>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod attempt {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "webhook_attempts")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub delivery_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub attempt: i32,
        pub at: DateTimeUtc,
        pub status_code: Option<i32>,
        pub response: Option<String>,
        pub latency_ms: i32,
        pub error: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

use sea_orm::entity::prelude::StringLen;

/// A delivery's state, stored as its name.
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
pub enum DeliveryStatus {
    /// Being attempted.
    #[sea_orm(string_value = "PENDING")]
    Pending,
    /// Answered 2xx.
    #[sea_orm(string_value = "SUCCEEDED")]
    Succeeded,
    /// Given up, or its endpoint was disabled or deleted; retried by hand.
    #[sea_orm(string_value = "FAILED")]
    Failed,
}
