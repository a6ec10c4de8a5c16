//! What the rule counts besides the running tasks: each lane's waiting tenants (read
//! from the tasks table at most every [`WAITING_TTL`]) and the claims this process's
//! batches admitted and have not written yet ([`Admitting`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::domains::ai_tasks::store;

/// How long a lane's waiting tenants are trusted: a tenant that just started waiting is
/// weighed in within this. One read per lane and process per period, whatever the
/// batches (a read counts the lane's PENDING work, from the index alone on PostgreSQL).
pub const WAITING_TTL: Duration = Duration::from_secs(1);

/// A lane's waiting tenants: the plan each waits under (the heaviest, if several).
pub(super) type Waiters = Arc<HashMap<String, String>>;

/// The waiting tenants of each lane, read at most every [`WAITING_TTL`].
#[derive(Default)]
pub struct Waiting {
    lanes: Mutex<HashMap<String, (Instant, Waiters)>>,
    /// One read at a time: batches that find the list stale together wait for one read.
    reading: tokio::sync::Mutex<()>,
}

impl Waiting {
    pub(super) async fn of(
        &self,
        db: &sea_orm::DatabaseConnection,
        plans: &crate::plans::Plans,
        lane: &str,
    ) -> Result<Waiters, sea_orm::DbErr> {
        let fresh = || {
            self.lanes
                .lock()
                .ok()
                .and_then(|lanes| lanes.get(lane).cloned())
                .filter(|(at, _)| at.elapsed() < WAITING_TTL)
                .map(|(_, w)| w)
        };
        if let Some(w) = fresh() {
            return Ok(w);
        }
        let _reading = self.reading.lock().await;
        if let Some(w) = fresh() {
            return Ok(w);
        }
        let mut waiting: HashMap<String, String> = HashMap::new();
        for (tenant, plan) in store::waiting_tenants(db, lane).await? {
            let heavier = waiting
                .get(&tenant)
                .is_none_or(|p| plans.get(p).weight < plans.get(&plan).weight);
            if heavier {
                waiting.insert(tenant, plan);
            }
        }
        let waiting = Arc::new(waiting);
        if let Ok(mut lanes) = self.lanes.lock() {
            lanes.insert(lane.to_owned(), (Instant::now(), waiting.clone()));
        }
        Ok(waiting)
    }
}

/// Claims admitted by this process's batches and not written yet, by (lane, tenant): a
/// batch weighing shares counts them as running.
#[derive(Default)]
pub struct Admitting(Mutex<HashMap<(String, String), u64>>);

impl Admitting {
    pub(super) fn snapshot(&self) -> HashMap<(String, String), u64> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }

    pub(super) fn add(&self, keys: &[(String, String)]) {
        if let Ok(mut m) = self.0.lock() {
            for k in keys {
                *m.entry(k.clone()).or_default() += 1;
            }
        }
    }

    fn remove(&self, keys: &[(String, String)]) {
        if let Ok(mut m) = self.0.lock() {
            for k in keys {
                if let Some(n) = m.get_mut(k) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        m.remove(k);
                    }
                }
            }
        }
    }
}

/// A batch's admissions while their claims are being written: dropped after the claims
/// committed (or failed), they stop counting.
pub struct Admitted<'a> {
    pub(super) admitting: &'a Admitting,
    pub(super) keys: Vec<(String, String)>,
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.admitting.remove(&self.keys);
    }
}
