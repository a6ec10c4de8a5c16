//! Per-user overrides of `[limits]`, set by admins: a row per user holding only the
//! overridden values as JSON, read through a short per-process cache.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::Utc;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveValue::Set, ConnectionTrait, DbErr, EntityTrait};
use serde::{Deserialize, Serialize};

use super::declared::{Limit, MAX_VALUE};

pub mod entity {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "user_limits")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub user_id: String,
        /// JSON of [`super::Overrides`].
        pub overrides: String,
        pub updated_at: DateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The limits an admin set for one user, by key; a limit not named keeps its configured
/// value. Stored as this JSON object (older rows, written when the limits were fields of
/// one struct, have the same shape).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
#[schema(value_type = std::collections::BTreeMap<String, u32>)]
pub struct Overrides(
    #[serde(deserialize_with = "crate::whole::u32_map")] pub BTreeMap<String, u32>,
);

impl Overrides {
    /// The overridden value of `limit`, else `configured`.
    pub fn value(&self, limit: &Limit, configured: u32) -> u32 {
        self.0.get(limit.key).copied().unwrap_or(configured)
    }

    /// The first key that is not a declared limit, or whose value is above
    /// [`MAX_VALUE`]: (key, problem).
    pub fn invalid(&self, declared: &[Limit]) -> Option<(String, String)> {
        self.0.iter().find_map(|(key, value)| {
            if !declared.iter().any(|l| l.key == key) {
                Some((key.clone(), "is not a limit".to_owned()))
            } else if *value > MAX_VALUE {
                Some((key.clone(), format!("must be at most {MAX_VALUE}")))
            } else {
                None
            }
        })
    }
}

/// The user's overrides (none set: all `None`).
pub async fn load(db: &impl ConnectionTrait, user_id: &str) -> Result<Overrides, DbErr> {
    let row = entity::Entity::find_by_id(user_id.to_owned())
        .one(db)
        .await?;
    Ok(row
        .and_then(|r| serde_json::from_str(&r.overrides).ok())
        .unwrap_or_default())
}

/// Replaces the user's overrides.
pub async fn save(
    db: &impl ConnectionTrait,
    user_id: &str,
    overrides: &Overrides,
) -> Result<(), DbErr> {
    let json = serde_json::to_string(overrides).map_err(|e| DbErr::Custom(e.to_string()))?;
    entity::Entity::insert(entity::ActiveModel {
        user_id: Set(user_id.to_owned()),
        overrides: Set(json),
        updated_at: Set(Utc::now()),
    })
    .on_conflict(
        OnConflict::column(entity::Column::UserId)
            .update_columns([entity::Column::Overrides, entity::Column::UpdatedAt])
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(())
}

/// How long a user's overrides are trusted before they are read again.
const TTL: Duration = Duration::from_secs(5);
const MAX_ENTRIES: usize = 10_000;

#[derive(Default)]
pub struct Cache {
    entries: Mutex<HashMap<String, (Arc<Overrides>, Instant)>>,
}

impl Cache {
    /// The user's overrides; none when the database cannot say (the configured limits
    /// then apply, which is the safe side).
    pub async fn get(&self, db: &impl ConnectionTrait, user_id: &str) -> Arc<Overrides> {
        if let Ok(entries) = self.entries.lock()
            && let Some((o, at)) = entries.get(user_id)
            && at.elapsed() < TTL
        {
            return o.clone();
        }
        let o = match load(db, user_id).await {
            Ok(o) => Arc::new(o),
            Err(e) => {
                tracing::warn!(error = %e, "reading limit overrides failed; using the configured limits");
                return Arc::default();
            }
        };
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(user_id.to_owned(), (o.clone(), Instant::now()));
        }
        o
    }

    pub fn forget(&self, user_id: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(user_id);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn values_are_whole_numbers_written_either_way() {
        let o: Overrides = serde_json::from_str(r#"{"a": 5, "b": 34389.0}"#).unwrap();
        assert_eq!((o.0["a"], o.0["b"]), (5, 34389));
        assert!(serde_json::from_str::<Overrides>(r#"{"a": 5.5}"#).is_err());
    }
}
