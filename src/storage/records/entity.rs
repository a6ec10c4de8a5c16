//! The `media_objects` table: one row per stored file (an upload or a generated output)
//! and the `storage_usage` table: bytes each tenant holds.

pub mod object {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "media_objects")]
    pub struct Model {
        /// A UUIDv7: ids sort by creation.
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub user_id: String,
        /// `video`, `image`, `audio` (uploads) or `generated`.
        pub purpose: String,
        pub status: crate::storage::records::ObjectStatus,
        /// Where the bytes are; `None` until the kind is known.
        pub store_key: Option<String>,
        pub size: i64,
        /// Bytes this row holds in `storage_usage` (the reservation, then the size).
        pub reserved: i64,
        pub content_type: Option<String>,
        pub sha256: Option<String>,
        pub width: Option<i32>,
        pub height: Option<i32>,
        pub duration_ms: Option<i64>,
        /// Why it was rejected.
        pub reason: Option<String>,
        /// The task that generated it.
        pub task_id: Option<String>,
        pub created_at: DateTimeUtc,
        pub updated_at: DateTimeUtc,
        /// Deleted by its owner (or its material was): invisible from then on.
        pub deleted_at: Option<DateTimeUtc>,
        /// When the collector removes the bytes and the row.
        pub purge_at: Option<DateTimeUtc>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod usage {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "storage_usage")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub user_id: String,
        pub bytes: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
