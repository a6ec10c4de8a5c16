//! The materials table: what AI tasks produce and owners search.

pub mod material {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "materials")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub user_id: String,
        #[sea_orm(unique)]
        pub task_id: String,
        pub kind: String,
        /// Text for text kinds; JSON (URL and metadata) for media.
        #[sea_orm(column_type = "Text")]
        pub content: String,
        pub title: String,
        /// A JSON array of strings.
        pub tags: String,
        /// Incremented by every change; the search index's external version.
        pub version: i64,
        pub created_at: DateTimeUtc,
        pub updated_at: Option<DateTimeUtc>,
        /// Soft delete: the row keeps its version so the delete is fenced like a change.
        pub deleted_at: Option<DateTimeUtc>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The vectors a material is found by in a search by meaning, one row each.
pub mod material_vector {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "material_vectors")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub material_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub seq: i16,
        pub model: String,
        /// Little-endian `f32`s.
        #[sea_orm(column_type = "Blob")]
        pub vector: Vec<u8>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
