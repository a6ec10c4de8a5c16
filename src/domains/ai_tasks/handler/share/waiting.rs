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
///
/// A batch reads the table's counts (an await), then decides and adds its own admissions
/// in one step under this lock ([`Admitting::deciding`]), counting what other batches
/// hold now *and* what they wrote while it read ([`Mark`]: a claim written during the read
/// may be missing from it). Counting such a claim twice defers a task, never admits one
/// too many.
#[derive(Default)]
pub struct Admitting(Mutex<Ledger>);

type Key = (String, String);

#[derive(Default)]
pub(super) struct Ledger {
    /// Admitted, not written yet.
    live: HashMap<Key, u64>,
    /// Written (or failed) since the process started: only grows.
    done: HashMap<Key, u64>,
}

/// What had been written when a batch started reading the table.
pub(super) struct Mark(HashMap<Key, u64>);

impl Admitting {
    /// Taken before a batch reads the table's counts.
    pub(super) fn mark(&self) -> Mark {
        Mark(self.0.lock().map(|l| l.done.clone()).unwrap_or_default())
    }

    /// The ledger, held while a batch decides and adds its admissions (no await inside).
    pub(super) fn deciding(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn remove(&self, keys: &[Key]) {
        let mut l = self.deciding();
        for k in keys {
            if let Some(n) = l.live.get_mut(k) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    l.live.remove(k);
                }
            }
            *l.done.entry(k.clone()).or_default() += 1;
        }
    }
}

impl Ledger {
    /// What other batches hold now, plus what they wrote since `mark` (maybe after the
    /// table was read).
    pub(super) fn elsewhere(&self, mark: &Mark) -> HashMap<Key, u64> {
        let mut all = self.live.clone();
        for (k, n) in &self.done {
            let since = n - mark.0.get(k).copied().unwrap_or(0).min(*n);
            if since > 0 {
                *all.entry(k.clone()).or_default() += since;
            }
        }
        all
    }

    pub(super) fn add(&mut self, keys: &[Key]) {
        for k in keys {
            *self.live.entry(k.clone()).or_default() += 1;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(t: &str) -> Key {
        ("ai.short".into(), t.into())
    }

    #[test]
    fn a_claim_written_while_a_batch_read_the_table_still_counts_for_it() {
        let admitting = Admitting::default();
        // Another batch holds one admission of tenant a.
        admitting.deciding().add(&[key("a")]);
        // This batch marks, then reads the table (which may predate the other's write)...
        let mark = admitting.mark();
        // ...while the other batch writes its claim and lets go.
        drop(Admitted {
            admitting: &admitting,
            keys: vec![key("a")],
        });
        let seen = admitting.deciding().elsewhere(&mark);
        assert_eq!(
            seen.get(&key("a")),
            Some(&1),
            "written during the read: counted"
        );
        // A batch that marks after the write finds it in the table, not here.
        let later = admitting.mark();
        assert!(admitting.deciding().elsewhere(&later).is_empty());
    }
}
