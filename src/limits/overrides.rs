//! Per-user overrides of `[limits]`, set by admins: a row per user holding only the
//! overridden values as JSON, read through a short per-process cache.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::Utc;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveValue::Set, ConnectionTrait, DbErr, EntityTrait};
use serde::{Deserialize, Serialize};

use crate::config::LimitSettings;

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

/// The limits an admin set for one user; `None` keeps the configured value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 1000000)]
    pub submits_per_sec: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 1000000)]
    pub submit_burst: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 1000000)]
    pub tasks_in_flight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 1000000)]
    pub tasks_running: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 1000000)]
    pub orders_per_sec: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 1000000)]
    pub order_burst: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 1000000)]
    pub tickets_per_min: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 1000000)]
    pub streams_per_user: Option<u32>,
}

/// The largest value a limit may be set to (a million a second is "unlimited" for any
/// tenant; 0 turns a limit off).
pub const MAX_VALUE: u32 = 1_000_000;

impl Overrides {
    /// The first field above [`MAX_VALUE`], if any.
    pub fn too_large(&self) -> Option<&'static str> {
        [
            ("submits_per_sec", self.submits_per_sec),
            ("submit_burst", self.submit_burst),
            ("tasks_in_flight", self.tasks_in_flight),
            ("tasks_running", self.tasks_running),
            ("orders_per_sec", self.orders_per_sec),
            ("order_burst", self.order_burst),
            ("tickets_per_min", self.tickets_per_min),
            ("streams_per_user", self.streams_per_user),
        ]
        .into_iter()
        .find(|(_, v)| v.is_some_and(|v| v > MAX_VALUE))
        .map(|(name, _)| name)
    }

    pub fn apply(self, base: LimitSettings) -> LimitSettings {
        LimitSettings {
            submits_per_sec: self.submits_per_sec.unwrap_or(base.submits_per_sec),
            submit_burst: self.submit_burst.unwrap_or(base.submit_burst),
            tasks_in_flight: self.tasks_in_flight.unwrap_or(base.tasks_in_flight),
            tasks_running: self.tasks_running.unwrap_or(base.tasks_running),
            orders_per_sec: self.orders_per_sec.unwrap_or(base.orders_per_sec),
            order_burst: self.order_burst.unwrap_or(base.order_burst),
            tickets_per_min: self.tickets_per_min.unwrap_or(base.tickets_per_min),
            streams_per_user: self.streams_per_user.unwrap_or(base.streams_per_user),
        }
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
    entries: Mutex<HashMap<String, (Overrides, Instant)>>,
}

impl Cache {
    /// The user's overrides; none when the database cannot say (the configured limits
    /// then apply, which is the safe side).
    pub async fn get(&self, db: &impl ConnectionTrait, user_id: &str) -> Overrides {
        if let Ok(entries) = self.entries.lock()
            && let Some((o, at)) = entries.get(user_id)
            && at.elapsed() < TTL
        {
            return *o;
        }
        let o = match load(db, user_id).await {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(error = %e, "reading limit overrides failed; using the configured limits");
                return Overrides::default();
            }
        };
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(user_id.to_owned(), (o, Instant::now()));
        }
        o
    }

    pub fn forget(&self, user_id: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(user_id);
        }
    }
}
