//! A waiting task's place in line: the tasks of its tenant ahead of it in its lane (it
//! starts after them; other tenants' work runs beside it under the fair share), every
//! tenant's ahead of it, and when it should start at the pace its tenant's work (else
//! the lane's) started lately. Shown by `GET /v1/tasks/{id}`, a stream's snapshot and,
//! while it waits, the live stream every `live.refresh_ms`.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};

use crate::domains::ai_tasks::entity::task;
use crate::domains::ai_tasks::kinds::Status;
use crate::domains::ai_tasks::store::{self, Task};
use crate::domains::ai_tasks::view::PlaceView;

/// Starts counted for the pace: long enough to smooth a burst, short enough to follow a
/// change of load.
const PACE_WINDOW: Duration = Duration::from_secs(60);

/// Starts per second since `first`, counting `n` of them; `None` under two.
fn pace(n: u64, first: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Option<f64> {
    let first = first?;
    if n < 2 {
        return None;
    }
    let secs = (now - first).num_milliseconds().max(1) as f64 / 1000.0;
    Some(n as f64 / secs)
}

/// The estimate for `position`, given starts per second.
pub fn estimate(position: u64, per_sec: f64) -> Duration {
    Duration::from_secs_f64((position as f64 + 1.0) / per_sec.max(1e-3))
}

/// The lanes' recent paces (starts per second), by lane and tenant (`None`: the whole
/// lane's), read once each however many waiting tasks ask: a live refresh tells every
/// followed task of a tenant its place with one pair of reads.
#[derive(Default)]
pub struct Paces(HashMap<(String, Option<String>), Option<f64>>);

impl Paces {
    async fn of(
        &mut self,
        db: &DatabaseConnection,
        lane: &str,
        tenant: Option<&str>,
    ) -> Result<Option<f64>, DbErr> {
        let key = (lane.to_owned(), tenant.map(str::to_owned));
        if let Some(p) = self.0.get(&key) {
            return Ok(*p);
        }
        let now = Utc::now();
        let since = now - chrono::Duration::from_std(PACE_WINDOW).unwrap_or_default();
        let (n, first) = store::starts_since(db, lane, tenant, since).await?;
        let p = pace(n, first, now);
        self.0.insert(key, p);
        Ok(p)
    }
}

/// The place of `t`, if it waits in a lane.
pub async fn place(db: &DatabaseConnection, t: &Task) -> Result<Option<PlaceView>, DbErr> {
    place_with(db, t, &mut Paces::default()).await
}

/// [`place`] with the paces read so far.
pub async fn place_with(
    db: &DatabaseConnection,
    t: &Task,
    paces: &mut Paces,
) -> Result<Option<PlaceView>, DbErr> {
    if t.status != Status::Pending || t.lane.is_empty() {
        return Ok(None);
    }
    let (position, waiting_ahead) = store::ahead_of(db, t).await?;
    let per_sec = match paces.of(db, &t.lane, Some(&t.tenant_id)).await? {
        Some(p) => Some(p),
        None => paces.of(db, &t.lane, None).await?,
    };
    let now = Utc::now();
    let wait = per_sec.map(|p| estimate(position, p));
    Ok(Some(PlaceView {
        lane: t.lane.clone(),
        position,
        waiting_ahead,
        estimated_start_at: wait
            .and_then(|w| chrono::Duration::from_std(w).ok())
            .map(|w| now + w),
        estimated_wait_ms: wait.map(|w| w.as_millis() as u64),
    }))
}

/// The PENDING tasks among `ids` (the ones a live refresh tells their place).
pub async fn waiting_among(db: &DatabaseConnection, ids: &[String]) -> Result<Vec<Task>, DbErr> {
    task::Entity::find()
        .filter(task::Column::Id.is_in(ids.iter().cloned()))
        .filter(task::Column::Status.eq(Status::Pending))
        .all(db)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_follows_the_pace() {
        let now = Utc::now();
        // 10 starts over the last 5 s: 2 a second.
        let p = pace(10, Some(now - chrono::Duration::seconds(5)), now).unwrap_or(0.0);
        assert!((p - 2.0).abs() < 0.01, "{p}");
        assert_eq!(estimate(3, p), Duration::from_secs(2));
        assert_eq!(pace(1, Some(now), now), None);
        assert_eq!(pace(5, None, now), None);
    }
}
